"""The robot: URDF model and kinematics, shape specifications, SRDF semantics, transforms."""

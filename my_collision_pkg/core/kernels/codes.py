"""The integer codes that kernels and the Python side share: one table for each meaning.

Plain ints (numba folds module-level ints into compiled code as constants). Nothing
else lives here, so the model and the geometry can name these codes without loading a
compiled kernel.
"""

# ----- shape kinds: ShapeGeometry.solid_kind and every kernel's per-shape kind array -----
KIND_OPEN_MESH = -1     # a mesh that bounds no volume (no inside test)
KIND_BOX = 0
KIND_SPHERE = 1
KIND_CYLINDER = 2
KIND_CAPSULE = 3
KIND_CONE = 4
KIND_CONVEX = 5         # a closed convex mesh, checked as a convex solid
KIND_MESH = 6           # a closed mesh, checked through its triangles
PRIMITIVE_KINDS = (KIND_BOX, KIND_SPHERE, KIND_CYLINDER, KIND_CAPSULE, KIND_CONE)

# ----- joint kinds of the movable joints (RobotModel.kinematics_arrays) -----
JOINT_REVOLUTE = 0      # revolute and continuous: rotation about the axis, radians
JOINT_PRISMATIC = 1     # translation along the axis, metres

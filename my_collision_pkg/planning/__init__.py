"""Planning on top of the core: adapters for motion planning libraries (ROS-free).

- :mod:`ompl`: OMPL's state validity checker and motion validators built from a
  ``CollisionChecker`` and a group, and :func:`ompl.plan` (OMPL is optional: the module
  imports without it and says so when used).
"""

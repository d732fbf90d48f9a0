"""my_collision_pkg: collision validation for ROS 2 planners.

The package is layered; a module imports only from its own layer or the layers
listed before it:

``core/``
    The ROS-free library: robot model, planning scene, geometry, checks (configuration,
    batch, explain, motion, trajectory), contact surfaces and the compiled kernels.
    numpy, numba, fcl, coal, trimesh, manifold3d, yaml and xacro only; never rclpy,
    message types or ``ament_index_python`` (resources such as ``package://`` lookup are
    passed in). ``core/kernels/`` holds only compiled code (numpy, numba, math).
``viz/``
    ROS-free pictures: the PNG renderer and the colour, arrow and label policy that the
    RViz markers share.
``planning/``
    ROS-free adapters for planning libraries on top of the core: OMPL's state validity
    checker and motion validators, and ``plan(...)`` (OMPL is optional: the module
    imports without it).
``ros/``
    The only code that imports rclpy, message types or the generated ``msg``/``srv``:
    the nodes, message conversions, runtime, QoS, client and marker building.
``tools/``
    Programs around the package: launch arguments (plain Python) and the demo.

``test/core`` keeps the layers honest (``test_layering.py``). Besides the four layer
folders this folder holds only ``_moved.py``: the table of the old flat import paths
(``my_collision_pkg.checker`` ...), served by an import hook installed below; each old
path warns once and forwards to its new home (see the README). ``msg`` and ``srv`` are
generated beside them by rosidl at build time (the colcon build; the pip wheel has the
ROS-free layers only). Importing this package imports only that small module.
"""
from my_collision_pkg._moved import install as _install_old_import_paths

_install_old_import_paths()

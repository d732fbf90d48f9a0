"""my_collision_pkg: collision validation for ROS 2 planners.

The modules directly under this package form a ROS-free core (robot model,
geometry, planning scene, checks, contacts, contact surfaces); only the
``*_node`` modules and ``conversions`` import rclpy or message types.
"""

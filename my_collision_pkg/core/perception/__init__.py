"""Perception: point clouds and occupancy octrees as collision geometry (ROS-free).

- :mod:`.point_cloud`: a ``sensor_msgs/PointCloud2`` given as plain data decoded into an
  (N, 3) array of points (numpy only), with its faults refused by name;
- :mod:`.cloud_frames`: a cloud in the planning frame or in a robot link's frame, posed by
  the package's own kinematics;
- :mod:`.self_filter`: points on or near the robot's own links and attached objects
  dropped with the exact inside and distance tests, and points or cells inside world
  objects cleared;
- :mod:`.occupancy`: the occupancy map, an immutable snapshot around a ``coal.OcTree``,
  built from points (``replace``), ray-cast into an octomap (``accumulate``) or read from a
  ``.bt`` / ``.ot`` file.
"""

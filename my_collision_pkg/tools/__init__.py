"""Programs around the package: launch arguments (plain Python) and the demo (a ROS client)."""

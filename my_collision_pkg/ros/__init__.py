"""ROS 2 adapters: nodes, message conversions, QoS, the service client, marker building.

This file stays empty of imports: the entry scripts import ``ros.stop_request`` before
rclpy loads.
"""

"""ROS-free pictures: the PNG renderer and the drawing policy shared with the RViz markers."""

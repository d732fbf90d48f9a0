"""Compiled kernels (numba): only numpy, numba, math and each other; no scene objects.

- ``codes``: the integer codes of shape kinds and joint kinds (plain ints, no compiled code);
- ``frames``: the inline helpers that move points and axes between frames;
- ``kinematics``: forward kinematics and shape poses;
- ``culling``: bounding-box culling of shape pairs and the one-configuration fast path;
- ``mesh_queries``: point in box or mesh, winding number, closest points on triangles,
  the AABB tree of a mesh and its queries;
- ``depth``: depths of points in solids and the overlap regions of two solids;
- ``thickness``: a solid's thickness along vertical lines (contact surfaces);
- ``advancement``: the motion checks' conservative advancement;
- ``warm_up``: the one call that compiles them (all but ``advancement``) ahead of the first request.
"""

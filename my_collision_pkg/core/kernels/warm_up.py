"""The kernel-level warm-up: compile (or load from numba's cache) the kernels one by one.

The checker calls :func:`warm_up` once when it is built. Each call below uses the
argument types the Python side passes, so that the signature compiled here is the one
used later. The motion kernels (``advancement``) are not called here: their arguments
are built by the checks. :func:`my_collision_pkg.core.warm_up.warm_up_services` covers
every kernel the services use, motion ones included, by running the checker's public
calls on a small built-in scene; ``python -m my_collision_pkg.core.warm_up`` runs it at
build time. It lives outside this package because kernels import only numpy, numba and
math (test/core/test_layering.py), and it builds scenes and checkers.
"""
from __future__ import annotations

import numpy as np
from numba.typed import List

from my_collision_pkg.core.kernels import explain_batch
from my_collision_pkg.core.kernels.cells import cells_in_boxes
from my_collision_pkg.core.kernels.clearance_rows import (assemble_rows, candidate_rows, check_on_meshes, finish_rows,
                                                           single_buffer_sizes, single_request_rows, single_rows,
                                                           single_settled_rows,
                                                           first_distance_rows, jacobian_and_local_points,
                                                           pack_row_pairs, pack_row_world, pack_world, pose_sizes,
                                                           settle_first_distances, settle_rows, sphere_gaps)
from my_collision_pkg.core.kernels.codes import KIND_BOX, KIND_CONVEX, KIND_MESH
from my_collision_pkg.core.kernels.contact_points import contact_points
from my_collision_pkg.core.kernels.epa import penetration_distances
from my_collision_pkg.core.kernels.culling import (first_candidate_row, first_candidate_row_packed, obb_candidates,
                                                    screen_pack, single_configuration_candidates)
from my_collision_pkg.core.kernels.footprint import convex_footprint, polytope_volume_centroid
from my_collision_pkg.core.kernels.gjk import convex_arrays
from my_collision_pkg.core.kernels.depth import (SolidArrays, SurfaceSamples, adjacency, label_components, merge_regions,
                                                pair_overlaps, pair_regions, points_depth, refine_to_support,
                                                summarize_regions, support_point, surface_points_inside)
from my_collision_pkg.core.kernels.gjk import convex_arrays
from my_collision_pkg.core.kernels.kinematics import forward_kinematics, shape_poses
from my_collision_pkg.core.kernels.mesh_queries import MeshTree, closest_point_on_triangles, contains_probe
from my_collision_pkg.core.kernels.mesh_rows import mesh_surface_rows
from my_collision_pkg.core.kernels.mtd import (check_mtd, coal_answer_is_mtd, other_basin_gap, overlaps, polish_checked,
                                               polished_coal_answer, search_mtd)
from my_collision_pkg.core.kernels.overlap import clip_edges_to_planes
from my_collision_pkg.core.kernels.penetrating_rows import slow_convex_rows, unseen_shapes
from my_collision_pkg.core.kernels.thickness import thickness_along_lines
from my_collision_pkg.core.kernels.support_features import (feature_contact, inside_margin, plane_basis, support_gap,
                                                              support_points)
from my_collision_pkg.core.kernels.tubes import edge_ends, screen_samples, tube_keep, tube_margin, tube_pieces_cover
from my_collision_pkg.core.kernels.witness_check import hull_vertex_triangles, pack_meshes


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel of this package but the motion ones."""
    warm_up_kinematics_and_culling()
    bodies = warm_up_contacts()
    warm_up_clearance_rows(bodies)
    warm_up_mesh_rows()
    explain_batch.warm_up()
    tube_margin(np.zeros((1, 1)), np.ones((1, 1)), np.ones(1), np.ones(1), np.ones(1), 1, np.zeros(1), np.ones(1), 0.1)
    tube_pieces_cover(np.zeros((1, 1)), np.ones((1, 1)), np.ones(1), np.ones(1), np.ones(1), 1, np.zeros(1), np.ones(1),
                      0.1, -0.05, 3)
    tube_keep(np.zeros((1, 1)), np.zeros((1, 1)), np.ones(1), np.ones(1), 0, np.zeros(1), np.ones(1), 0.1)
    screen_samples(np.zeros(1), np.ones(1), np.ones((1, 1)), 0.1, 4, 64, np.zeros((65, 64)))
    current = np.zeros(1)
    current.setflags(write=False)       # as PlanningScene.current_positions
    edge_ends(np.zeros((2, 1)), np.zeros(1, dtype=np.int64), current, True, -np.ones(1), np.ones(1), 1.0,
              np.empty((2, 1)))
    square = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 1.0], [0.5, 0.5, 0.0]])
    support_points(square, np.array([0.0, 0.0, 1.0]), 1e-7, np.empty((5, 3)))        # a face: the SVD too
    # the switch margin of witness_features.feature_contact: a gap, a point in a segment and in a face
    support_gap(square, np.array([0.0, 0.0, 1.0]), 1e-7)
    plane_basis(0.0, 0.0, 1.0)                         # also called from Python (crossing segments)
    for count in (2, 4):
        inside_margin(np.array([0.5, 0.5, 1.0]), square[:count].copy(), count, np.array([0.0, 0.0, 1.0]))


def warm_up_kinematics_and_culling() -> None:
    """Forward kinematics, shape poses, culling, the fast path, the probe, closest points, thickness,
    the occupancy cells near boxes, the surfaces' edge clipping."""
    T = np.eye(4)[None, None].copy()
    forward_kinematics(np.zeros((1, 1)), np.ones((1, 1)), np.zeros(1), np.zeros(1, dtype=np.int64),
                       np.array([[0.0, 0.0, 1.0]]), np.array([-1], dtype=np.int64), np.eye(4)[None].copy(),
                       np.array([0], dtype=np.int64), T)
    poses = np.empty((1, 2, 4, 4))
    shape_poses(T, np.array([0, -1], dtype=np.int64), np.stack([np.eye(4), np.eye(4)]), poses)
    out = np.empty((1, 1), dtype=np.bool_)
    obb_candidates(poses, np.zeros((2, 3)), np.stack([np.eye(3), np.eye(3)]), np.ones((2, 3)),
                   np.array([[0, 1]], dtype=np.int64), np.zeros(1), out)
    triangles = np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    contains_probe(np.eye(4), np.eye(4), np.zeros((1, 3)), np.zeros(3), np.eye(3), np.ones(3), triangles)
    closest_point_on_triangles(np.zeros(3), triangles)
    current = np.zeros(1)
    current.setflags(write=False)       # as PlanningScene.current_positions: one signature, compiled here
    single_configuration_candidates(np.zeros(1), np.zeros(1, dtype=np.int64), current, True, -np.ones(1),
                                    np.ones(1), np.ones((1, 1)), np.zeros(1), np.zeros(1, dtype=np.int64),
                                    np.array([[0.0, 0.0, 1.0]]), np.array([-1], dtype=np.int64),
                                    np.eye(4)[None].copy(), np.array([0], dtype=np.int64),
                                    np.array([0, -1], dtype=np.int64), np.stack([np.eye(4), np.eye(4)]),
                                    np.zeros((2, 3)), np.stack([np.eye(3), np.eye(3)]), np.ones((2, 3)),
                                    np.array([[0, 1]], dtype=np.int64), np.zeros(1), np.empty((1, 1)),
                                    np.empty((1, 1, 4, 4)), np.empty((1, 2, 4, 4)), np.empty((1, 1), dtype=np.bool_),
                                    np.empty(1, dtype=np.int64))
    row_arguments = (-np.ones(1), np.ones(1), np.ones((1, 1)), np.zeros(1), np.zeros(1, dtype=np.int64),
                     np.array([[0.0, 0.0, 1.0]]), np.array([-1], dtype=np.int64), np.eye(4)[None].copy(),
                     np.array([0], dtype=np.int64), np.array([0, -1], dtype=np.int64),
                     np.stack([np.eye(4), np.eye(4)]), np.zeros((2, 3)), np.stack([np.eye(3), np.eye(3)]),
                     np.ones((2, 3)), np.array([[0, 1]], dtype=np.int64), np.zeros(1), np.empty((1, 1)),
                     np.empty((1, 1, 4, 4)), np.empty((1, 2, 4, 4)), np.empty((1, 1), dtype=np.bool_),
                     np.empty(1, dtype=np.int64))
    # the screen, with its convex pre-test as pair_tests.any_collision passes it: a box and a hull (a tetrahedron)
    tetrahedron = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    convex = tuple(convex_arrays([KIND_BOX, KIND_CONVEX], np.ones((2, 3)), [np.zeros((0, 3)), tetrahedron],
                                 [[], [[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]]]))
    first_candidate_row(np.zeros((2, 1)), 0, *row_arguments, convex, np.ones(1, dtype=np.bool_), np.zeros((1, 3)))
    first_candidate_row_packed(np.zeros((2, 1)), 0, screen_pack(*row_arguments, convex, np.ones(1, dtype=np.bool_),
                                                                np.zeros((1, 3))))
    # clearance's rows: a robot link against a world object, one revolute and one prismatic joint
    for n_jac in (2, 0):
        jacobian_and_local_points(T, np.zeros(1, dtype=np.int64), np.array([[0, 1]], dtype=np.int64),
                                  np.array([0, -1], dtype=np.int64), np.array([0, -1], dtype=np.int64),
                                  np.stack([np.eye(4), np.eye(4)]), np.zeros(2, dtype=np.int64),
                                  np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]), np.array([False, True]),
                                  np.array([[1.0, 1.0], [0.0, 0.0]]), np.zeros((1, 2, 3)), np.array([[0.0, 0.0, 1.0]]),
                                  n_jac > 0, np.empty((1, n_jac)), np.empty((1, 2, 3)))
    one = np.zeros(1, dtype=np.int64)
    sphere_gaps(poses, one, one, np.ones(1, dtype=np.int64), np.zeros((2, 3)), np.ones(2), np.empty(1))
    settle_first_distances(np.ones(1), np.zeros((1, 3)), np.ones((1, 3)), np.ones(1, dtype=np.bool_), np.ones(1), 1e-5,
                           1e6, np.ones(1, dtype=np.bool_), np.empty(1), np.empty((1, 2, 3)), np.empty((1, 3)),
                           np.zeros(1, dtype=np.int8), 1, 2, np.empty(1, dtype=np.bool_), np.empty(1, dtype=np.bool_))
    flags = np.zeros(1, dtype=np.bool_)
    assemble_rows(np.ones(1, dtype=np.int8), np.ones(1), np.zeros((1, 2, 3)), np.ones((1, 3)),
                  np.full((1, 2), -1, dtype=np.int32), flags, flags, flags, one, one, np.zeros(1), 0, 1, 1e-9)
    thickness_along_lines(np.zeros((1, 2)), np.zeros(1, dtype=np.int64), np.array([0, 0], dtype=np.int64),
                          np.zeros(0, dtype=np.int64), np.zeros((1, 12)), np.zeros((1, 3), dtype=np.bool_),
                          np.zeros((1, 8)), 1.0)
    # as octomap_cells.CellTable.near passes them: cells sorted by x, a float bound, boxes' corners
    cells_in_boxes(np.zeros((1, 3)), np.ones(1), 1.0, -np.ones((1, 3)), np.ones((1, 3)), np.zeros(1, dtype=np.bool_))
    clip_edges_to_planes(np.zeros((2, 3)), np.array([[0, 1]], dtype=np.int64), np.array([[0.0, 0.0, 1.0, 1.0]]),
                         -np.ones(3), np.ones(3), 1e-9)
    # the convex footprint, as contact_surface and convex_overlap pass it (a unit tetrahedron)
    corners = np.array([[0.0, 0.0, -0.5], [1.0, 0.0, -0.5], [0.0, 1.0, -0.5], [0.0, 0.0, 0.5]])
    faces = np.array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]], dtype=np.int64)
    polytope_volume_centroid(corners, faces, np.arange(4, dtype=np.int64), np.zeros(3))
    equations = np.array([[0.0, 0.0, -1.0, -0.5], [0.0, -1.0, 0.0, 0.0], [0.577, 0.577, 0.577, -0.289],
                          [-1.0, 0.0, 0.0, 0.0]])
    convex_footprint(corners, faces, equations, 1e-9, 1e-9)


def warm_up_mesh_rows() -> None:
    """Clearance's off-mesh apart rows (kernels.mesh_rows.mesh_surface_rows) as checks.clearance calls it: a box
    (shape 0) below a tetrahedron mesh (shape 1, packed slot 0), one row."""
    vertices = np.array([[0.0, 0.0, 0.5], [0.2, 0.0, 0.5], [0.0, 0.2, 0.5], [0.0, 0.0, 0.7]])
    faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], dtype=np.int64)
    packed = pack_meshes([MeshTree.of(vertices, faces)], [np.ascontiguousarray(vertices[faces])])
    convex = convex_arrays([KIND_BOX, KIND_MESH], np.full((2, 3), 0.1), [np.zeros((0, 3)), vertices])
    T_shape = np.stack([np.eye(4), np.eye(4)]).reshape(1, 2, 4, 4).copy()
    points = np.array([[[0.05, 0.05, 0.1], [0.05, 0.05, 0.5]]])
    normal = np.array([[0.0, 0.0, 1.0]])
    mesh_surface_rows(np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.array([[0, 1]], dtype=np.int64),
                      np.array([[-1, 0]], dtype=np.int64), T_shape, np.array([True, False]), convex.params, *packed, 1e6, 1,
                      np.zeros(1, dtype=np.int8), np.full(1, 0.4), points, normal, np.full((1, 2), -1, dtype=np.int32),
                      np.zeros(1, dtype=np.int64))


def warm_up_clearance_rows(bodies: List) -> None:
    """Clearance's chunk kernels as checks.clearance calls them (packed arrays), on one revolute link carrying a
    box near a world box: candidate rows, first distances (the compiled GJK), settling, the rows kept; ``bodies``
    the penetrating rows' typed list (:func:`warm_up_penetrating_rows`) for a one-configuration request's last step."""
    eye = np.eye(4)
    T_world_box = eye.copy()
    T_world_box[0, 3] = 0.3
    floats, ints = pack_world(-np.ones(1), np.ones(1), np.ones((1, 1)), np.zeros(1), np.zeros(1, dtype=np.int64),
                              np.array([[0.0, 0.0, 1.0]]), np.array([-1], dtype=np.int64), eye[None].copy(),
                              np.array([0], dtype=np.int64), np.array([0, -1], dtype=np.int64),
                              np.stack([eye, T_world_box]), np.zeros((2, 3)), np.stack([np.eye(3), np.eye(3)]),
                              np.full((2, 3), 0.1), np.zeros((2, 3)), np.full(2, 0.2))
    pairs = np.array([[0, 1]], dtype=np.int64)
    thresholds = np.ones(1)
    current = np.zeros(1)
    current.setflags(write=False)       # as PlanningScene.current_positions and the clearance tables' no_current
    n_q, n_link, n_shape = pose_sizes(ints, 1)
    poses = np.empty(n_q + n_link + n_shape)
    rows = np.empty((2, 1), dtype=np.int64)
    count = candidate_rows(np.zeros((1, 1)), np.zeros(1, dtype=np.int64), current, True, floats, ints, pairs,
                           thresholds, poses, rows)
    T_link = poses[n_q:n_q + n_link].reshape(1, 1, 4, 4)
    T_shape = poses[n_q + n_link:].reshape(1, 2, 4, 4)
    convex = convex_arrays([KIND_BOX, KIND_BOX], np.full((2, 3), 0.1), [np.zeros((0, 3))] * 2)
    world_f, world_i = pack_row_world(convex, pack_meshes([], []), np.array([0, -1], dtype=np.int64),
                                      np.array([0, -1], dtype=np.int64), np.stack([eye, eye]),
                                      np.zeros(1, dtype=np.int64), np.array([[0.0, 0.0, 1.0]]), np.array([False]),
                                      np.array([[1.0], [0.0]]))
    true = np.ones(1, dtype=np.bool_)
    pair_f, pair_i = pack_row_pairs(pairs, true, true, true, np.full((1, 2), -1, dtype=np.int64),
                                    np.zeros((1, 2), dtype=np.bool_), true, np.full(1, 1e-5), np.zeros(1))
    cfg, pair = rows[0, :count], rows[1, :count]
    raw, p0, p1, measured, _, support = first_distance_rows(cfg, pair, T_shape, world_f, world_i, pair_f, pair_i,
                                                            1e-12)
    # the compiled EPA (first_distance_rows's penetrating rows), on two overlapping boxes, as the tests call it
    T_near = eye.copy()
    T_near[0, 3] = 0.15
    penetration_distances(convex, np.array([0], dtype=np.int64), np.array([1], dtype=np.int64), eye[None].copy(),
                          T_near[None].copy(), 1e-12, 1e-9, np.empty(1), np.empty((1, 3)), np.empty((1, 3)),
                          np.zeros(1, dtype=np.bool_))
    k = len(cfg)
    state, distance, points = np.zeros(k, dtype=np.int8), np.full(k, np.inf), np.zeros((k, 2, 3))
    normal, subshapes, flags = np.zeros((k, 3)), np.full((k, 2), -1, dtype=np.int32), np.zeros(k, dtype=np.bool_)
    settle_rows(raw, p0, p1, measured, support, cfg, pair, T_shape, world_f, world_i, pair_f, pair_i, thresholds, 1e-5, 1e6,
                1e-18, 1, 2, distance, points, normal, state, subshapes)
    for jacobians in (True, False):
        finish_rows(state, distance, points, normal, subshapes, ~flags, flags, flags, cfg, pair, T_link, T_shape,
                    support, world_f, world_i, pair_f, pair_i, 0, 1, 1e-9, jacobians, -1)
        # the same steps in one call, into buffers (a one-configuration request)
        sizes = single_buffer_sizes(1, 1)
        single_rows(cfg, pair, T_link, T_shape, world_f, world_i, pair_f, pair_i, thresholds, 1e-12, 1e-5, 1e6, 1e-18,
                    4e-18, 1, 2, 0, 1e-9, jacobians, -1, np.zeros(sizes[0]), np.zeros(sizes[1], dtype=np.int64),
                    np.zeros(sizes[2], dtype=np.int32), np.zeros(sizes[3], dtype=np.int8),
                    np.zeros(sizes[4], dtype=np.bool_))
        # its penetrating rows' step (here nothing left to it: the types are what counts)
        angles = np.linspace(0.0, 2.0 * np.pi, 8, endpoint=False)
        single_settled_rows(cfg, pair, T_link, T_shape, world_f, world_i, pair_f, pair_i, thresholds, pairs,
                            np.zeros(2, dtype=np.bool_), np.zeros(2, dtype=np.bool_), np.full(2, -1, dtype=np.int64),
                            bodies, np.ones(10), np.cos(angles), np.sin(angles), 0, 1, 0, 1e-9, jacobians, -1,
                            np.zeros(sizes[0]), np.zeros(sizes[1], dtype=np.int64), np.zeros(sizes[2], dtype=np.int32),
                            np.zeros(sizes[3], dtype=np.int8), np.zeros(sizes[4], dtype=np.bool_))
        # the candidate rows and both steps in one call (a one-configuration request once bodies are made)
        single_request_rows(np.zeros((1, 1)), np.zeros(1, dtype=np.int64), current, True, floats, ints, pairs,
                            thresholds, poses, rows, T_link, T_shape, world_f, world_i, pair_f, pair_i, 1e-12, 1e-5,
                            1e6, 1e-18, 4e-18, 1, 2, 0, 1e-9, jacobians, -1, np.zeros(2, dtype=np.bool_),
                            np.zeros(2, dtype=np.bool_), np.full(2, -1, dtype=np.int64), bodies, np.ones(10),
                            np.cos(angles), np.sin(angles), 0, np.zeros(sizes[0]), np.zeros(sizes[1], dtype=np.int64),
                            np.zeros(sizes[2], dtype=np.int32), np.zeros(sizes[3], dtype=np.int8),
                            np.zeros(sizes[4], dtype=np.bool_))


def warm_up_contacts() -> List:
    """The depth kernels, for every shape kind, with and without a manifold mesh; returns the typed list of
    bodies :func:`warm_up_penetrating_rows` made."""
    corners = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    faces = np.array([[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]])
    triangles = np.ascontiguousarray(corners[faces])
    planes = np.array([[0.0, 0.0, 1.0, 1.0]])
    points = np.zeros((1, 3))
    depth = np.empty(1)
    surface = np.empty((1, 3))
    triangle = np.empty(1, dtype=np.int64)
    out = np.empty(3)
    tree = MeshTree.of(corners, faces)
    edges = np.array([[0, 1]], dtype=np.int64)
    samples = SurfaceSamples(corners, np.full(4, -1), edges, *adjacency(4, edges), np.zeros(4, dtype=np.int64))
    for kind in range(KIND_MESH + 1):
        for manifold in (False, True):
            points_depth(points, np.eye(4), kind, np.ones(3), planes, triangles, tree.bounds, tree.nodes,
                         tree.order, tree.pseudo_normals, manifold, np.zeros(3), np.eye(3), np.ones(3),
                         depth, surface, triangle)
            points_depth(points, np.eye(4), kind, np.ones(3), planes, triangles, tree.bounds, tree.nodes,
                         tree.order, tree.pseudo_normals, manifold, np.zeros(3), np.eye(3), np.ones(3),
                         depth, surface, triangle, tree.face_normals)
        support_point(kind, np.ones(3), np.zeros((1, 3)), np.ones(3), out)
        for manifold in (False, True):
            surface_points_inside(samples, np.eye(4), np.eye(4), _solid(kind, planes, triangles, tree, manifold))
        refine_to_support(1, kind, np.ones(3), corners, np.eye(4), np.zeros(3), np.ones(3), 0.5, np.eye(4),
                          _solid(KIND_MESH, planes, triangles, tree, True))
    warm_up_mtd()
    # clearance's check of hull witness points on their meshes (one mesh side, as the clearance tables pass them;
    # the tetrahedron its own hull, so that the side is settled on its hull vertex's triangles)
    hull = convex_arrays([KIND_MESH, KIND_BOX], np.ones((2, 3)), [corners, np.zeros((0, 3))])
    hull_triangles = hull_vertex_triangles(hull.vertex_start, hull.vertices, [0], [triangles])
    check_on_meshes(np.full(1, 2, dtype=np.int8), np.zeros((1, 2, 3)), np.array([[-1.0, 0.0, 0.0]]),
                    np.full((1, 2), -1, dtype=np.int64), np.eye(4)[None, None].repeat(2, axis=1), np.zeros(1, dtype=np.int64),
                    np.array([[0, 1]], dtype=np.int64), np.array([[0, -1]], dtype=np.int64),
                    np.array([[True, False]]), 2, 1, 1e-18, *pack_meshes([tree], [triangles]), hull.vertex_start,
                    hull.vertices, hull.neighbour_start, hull.neighbours, hull.probes, *hull_triangles,
                    np.full((1, 2), -1, dtype=np.int32))
    solid = _solid(KIND_MESH, planes, triangles, tree, True)
    pair_regions(1, 1, tuple(samples), tuple(solid), np.eye(4), tuple(samples), tuple(solid), np.eye(4))
    pair_overlaps(tuple(samples), tuple(solid), np.eye(4), tuple(samples), tuple(solid), np.eye(4))
    bodies = warm_up_penetrating_rows(tuple(samples), tuple(solid))
    labels = label_components(2, np.array([[0, 1]], dtype=np.int64), np.array([True, True]))
    _, lo, hi = summarize_regions(labels, np.ones(2), np.zeros((2, 3)))
    merge_regions(np.ones(len(lo)), lo, hi)
    return bodies


def warm_up_penetrating_rows(samples: tuple, solid: tuple) -> List:
    """Clearance's penetrating convex rows in one call (kernels.penetrating_rows.slow_convex_rows), with the
    argument types checks.clearance passes and the typed list of bodies it builds (one row of each route: a vertex
    set against itself, as a closed mesh's hulls); returns that list."""
    vertices = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    bodies = List()
    bodies.append((samples, solid, (5, np.zeros(3), vertices, np.array([[0.0, 0.0, -1.0]]), np.zeros(1))))
    T = np.eye(4)[None, None].repeat(2, axis=1)
    T[0, 1, 2, 3] = 0.5
    zeros = np.zeros(2, dtype=np.int64)
    angles = np.linspace(0.0, 2.0 * np.pi, 8, endpoint=False)
    p0 = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    p1 = np.array([[0.0, 0.0, 0.5], [0.0, 0.0, 0.5]])
    unseen_shapes(np.array([0, 1], dtype=np.int64), np.array([0, 1], dtype=np.int64),
                  np.array([[0, 1], [0, 1]], dtype=np.int64), zeros)
    slow_convex_rows(np.array([0, 1], dtype=np.int64), zeros, np.array([0, 1], dtype=np.int64),
                     np.array([[0, 1], [0, 1]], dtype=np.int64), np.array([True, False]), np.array([True, False]),
                     zeros,
                     np.ones(2, dtype=np.bool_), np.full(2, -0.5), p0, p1, T, bodies, 1e6, 1e-6, 1e-6, 1e-3, 1e-7,
                     np.cos(angles), np.sin(angles), 1e-6, 2e-5, 0.99995, 0.05, 1e-9, 1, np.zeros(2, dtype=np.int8),
                     np.empty(2), np.empty((2, 2, 3)), np.empty((2, 3)), np.full((2, 2), -1, dtype=np.int32),
                     np.ones(2, dtype=np.bool_), np.zeros(2, dtype=np.bool_), np.zeros(2, dtype=np.bool_))
    return bodies


def warm_up_mtd() -> None:
    """The MTD check and search (kernels.mtd), with the argument types penetration.checked_mtd passes
    (the kind a runtime int: one signature covers every kind)."""
    kind_b = 0                          # KIND_BOX; body A a convex vertex set (KIND_CONVEX)
    vertices = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    params, pose, normal = np.ones(3), np.eye(4), np.array([0.0, 0.0, 1.0])
    check_mtd(5, np.zeros(3), vertices, pose, kind_b, params, np.zeros((1, 3)), pose, normal, 1.0, 1e-6, 1e-3)
    direction = np.empty(3)
    for extra in (np.zeros((0, 3)), normal[None].copy()):
        search_mtd(5, np.zeros(3), vertices, pose, kind_b, params, np.zeros((1, 3)), pose, extra, np.eye(3), 1,
                   0.05, 0.01, direction)
    overlaps(5, np.zeros(3), vertices, pose, kind_b, params, np.zeros((1, 3)), pose, np.eye(3), np.empty(3))
    contact_points(np.zeros(3), normal.copy(), -1.0, np.eye(3), np.zeros(3), np.eye(3), np.zeros(3), np.empty((4, 3)))
    coal_answer_is_mtd(5, np.zeros(3), vertices, pose, kind_b, params, np.zeros((1, 3)), pose, -1.0, np.zeros(3),
                       -normal, normal.copy(), 1e-6, 1e-6, 1e-3, np.empty((2, 3)))
    polished_coal_answer(5, np.zeros(3), vertices, pose, kind_b, params, np.zeros((1, 3)), pose, -1.0, np.zeros(3),
                         -normal, normal.copy(), 1e-6, 1e-6, 1e-3, np.empty((3, 3)))
    polish_checked(5, np.zeros(3), vertices, pose, kind_b, params, np.zeros((1, 3)), pose, normal.copy(), 1.0, 1e-6,
                   1e-6, 1e-3)
    faces = np.array([[0.0, 0.0, -1.0]])            # a vertex set's unit face normals and offsets; none for a primitive
    other_basin_gap(5, np.zeros(3), vertices, pose, faces, np.zeros(1), kind_b, params, np.zeros((1, 3)), pose,
                    np.zeros((0, 3)), np.zeros(0), normal.copy(), 1.0, np.zeros(3), -normal, 2e-5, 0.99995, 0.05, 1e-9)
    # clearance's witness-feature step in one call (witness_features.posed_feature_contact): a vertex set on a box
    angles = np.linspace(0.0, 2.0 * np.pi, 8, endpoint=False)
    feature_contact(5, np.zeros(3), vertices, pose, faces, np.zeros(1), kind_b, params, np.zeros((1, 3)), pose,
                    np.zeros((0, 3)), np.zeros(0), -0.5, normal.copy(), 1e-7, np.cos(angles), np.sin(angles), 1e-6,
                    2e-5, 0.99995, 0.05, 1e-9, np.empty((2, 3)))


def _solid(kind: int, planes: np.ndarray, triangles: np.ndarray, tree: MeshTree, manifold: bool) -> SolidArrays:
    """A unit solid of any kind, with the argument types the narrow phase passes."""
    return SolidArrays(kind, np.ones(3), planes, triangles, tree.bounds, tree.nodes, tree.order, tree.pseudo_normals,
                       manifold, np.zeros(3), np.eye(3), np.ones(3), tree.face_normals)

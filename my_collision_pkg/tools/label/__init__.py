"""Exact labels for many configurations and motions, on Ray: ``python -m my_collision_pkg.tools.label``.

ROS-free (it imports no rclpy). Modules: :mod:`items` (sampled or read work items),
:mod:`labeller` (one shard in one process: the checker built once per process and world),
:mod:`output` (Parquet part files and the manifest: atomic writes, resuming),
:mod:`job` (checking a job at the start, running it), :mod:`ray_engine` (the shards as Ray
tasks; Ray is imported only there) and :mod:`cli` (the command line).
See ``docs/labelling.md``.
"""

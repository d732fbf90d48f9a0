"""The planning scene: world objects, the allowed-collision rules, world snapshots, loading."""

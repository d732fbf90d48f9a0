"""Contact surfaces: the overlap of two bodies as a pressure field on a surface."""

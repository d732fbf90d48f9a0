"""Compiled kernels (numba): only numpy, numba, math and each other; no scene objects."""

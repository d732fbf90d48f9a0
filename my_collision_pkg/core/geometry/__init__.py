"""Collision geometry of shapes: fcl and coal objects, mesh files, surface samples."""

"""The checks: configuration, batch, explain, motion and trajectory, and their result types."""

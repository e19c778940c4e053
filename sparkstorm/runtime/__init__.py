"""The driver's control plane: superstep loop, spout tasks, task runner, metrics."""

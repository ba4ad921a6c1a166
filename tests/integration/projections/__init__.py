"""The read side: projections, their processes, metrics, the row cache and the live feed."""

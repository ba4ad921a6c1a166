"""Read side: projections of the event log (built by the read-side issue)."""

"""The event store: SQLite and PostgreSQL, closing, chain links, write order, racing processes."""

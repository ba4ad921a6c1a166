"""Tools a run calls: the built-in tools over the sample data, and MCP servers of every kind."""

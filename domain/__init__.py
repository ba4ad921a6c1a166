"""Pure domain model: enums, value objects, the three aggregates and the release table."""

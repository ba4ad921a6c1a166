"""Adapters: settings, event-store wiring and (later) SQL tables, model providers and tools."""

"""Surviving failures: crash recovery, database outages, failed looks and unforeseen save errors."""

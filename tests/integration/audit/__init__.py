"""The audit: ``harness audit verify`` and ``export`` over realistic logs, clean and tampered."""

"""Read side: SQL tables projected from the event log, and rebuildable from it at any time.

``tables`` defines them; ``run_table``, ``trace``, ``sse_feed`` and ``sessions`` project into them
(``base`` is what they share); ``runner`` applies them in batches exactly once and ``live`` keeps
them following the log; ``queries`` holds every read the API and the CLI make; ``agreement``
compares the tables with a rebuild from the log.
"""

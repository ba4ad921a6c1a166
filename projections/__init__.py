"""Read side: the projections of the event log into read tables, rebuildable at any time.

``run_table``, ``trace``, ``sse_feed`` and ``sessions`` map events to rows through the
``application.view_port`` protocols (``base`` is what they share); ``infrastructure`` defines the
tables and writes them. ``runner`` applies the projections in batches exactly once and ``live``
keeps them following the log; ``queries`` holds every read the API and the CLI make;
``agreement`` compares the tables with a rebuild from the log.
"""

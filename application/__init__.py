"""Use cases against ports: the event store application and the chat runtime.

``store`` loads and saves the aggregates; ``chat`` runs a request in SPEC §3 order through the
harness core (``harness``), the diagnosis loop, the tool boundary, the answer routes and release
(``guards``, ``evidence``, ``judge``); ``dispatch``, ``recovery`` and ``outage`` execute and end
runs in the background. ``ports`` names what the runtime needs from outside: a model provider,
tools, knowledge retrieval and a clock. Subpackages: ``explain`` (the SPEC §15 answers for a run)
and ``audit`` (tamper evidence, checkpoints, exports and their offline verification).
"""

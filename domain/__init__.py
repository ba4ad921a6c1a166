"""Pure domain model: the aggregates, their events and the rules they follow, with no I/O.

Four aggregates: ``Run`` (one request's lifecycle, budget, cancellation, guards and release),
``ToolInvocation`` (one tool call and its projected evidence), ``Collection`` (a run's evidence
collection, gain and saturation) and ``Session`` (who a conversation belongs to); plus the audit
checkpoint stream, ``AuditCheckpoint`` (the log's own record of every stream's head). Around
them: the state axes and enumerations (``states``), value objects (``values``), the release rules
and outcome table (``release``, ``guard_stages``), grounding and the answer routes' rules
(``grounding``, ``answers``), the event catalogue, redaction of failure causes and the
``DomainError`` hierarchy.
"""

"""One router per resource: chat, runs, sessions, system, audit, stats, evals (``api.main``).

``chat`` (``POST /v1/chat``: ask and stream the run), ``runs`` (``/v1/runs``: start a detached
run, list runs, one run, its stream, cancel, its trace and explanation), ``sessions``
(``/v1/sessions/{id}``), ``system`` (health, readiness, the projections' positions and their
rebuild, the workers' leases), ``audit`` (``/v1/audit/events``, the log itself, and
``/v1/audit/verify``, its verification), ``stats`` (``/v1/stats/daily``, the daily totals) and
``evals`` (``/v1/evals``, the evaluations ``harness eval`` recorded).
``starting`` is no router: it starts a run from a request, checking the limits, for the chat and
runs routers.
"""

"""One router per resource: chat, runs, sessions, system and audit.

``chat`` (``POST /v1/chat``), ``runs`` (``/v1/runs``: detached runs, their trace and explanation),
``sessions`` (``/v1/sessions``), ``system`` (health, readiness and the projections' positions) and
``audit`` (``/v1/audit/events``, the log itself); ``starting`` holds the request limits the chat
and runs routers share.
"""

"""Adapters: settings, the event store and databases, model providers, tools and knowledge.

``settings`` reads the ``HARNESS_*`` environment; ``eventstore`` and ``pg_recorder`` build the
event store on SQLite or PostgreSQL, ``pg_listen`` wakes followers on NOTIFY and ``leases`` tracks
the live workers; ``database`` is the read side's engine; ``model_openai``, ``model_offline`` and
``model_scripted`` are the model providers; ``tools``, ``ops_data`` and ``ops_scope`` are the
read-only ops tools over the sample data; ``knowledge`` searches the shipped runbooks; and
``composition`` builds the whole service from ``Settings``.
"""

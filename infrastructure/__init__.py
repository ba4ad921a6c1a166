"""Adapters: settings, the event store and databases, model providers, tools and knowledge.

``settings`` reads the ``HARNESS_*`` environment; ``eventstore`` and ``pg_recorder`` build the
event store on SQLite or PostgreSQL, ``pg_listen`` wakes followers on NOTIFY and ``leases`` tracks
the live workers (``processes`` proves a dead one); ``database`` is the read side's engine;
``model_openai`` (with ``openai_wire`` and ``openai_errors``), ``model_offline`` (with
``offline_agent``) and ``model_scripted`` (with ``scripted_replies``, ``scripted_tools`` and
``scripted_play``) are the model providers, the last two sharing ``model_reply``; ``tools``,
``ops_data`` and ``ops_scope`` are the read-only ops tools over the sample data; ``knowledge``
searches the shipped runbooks. The service is assembled above, in ``bootstrap``.
"""

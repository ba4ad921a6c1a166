"""The audit toolkit: tamper evidence, exports of the log and their offline verification.

``chain`` links every stored event to its stream's previous one and ``checkpoints`` records the
streams' heads in the log itself; ``records`` exports the log as JSON Lines; ``verify`` checks an
export (or the store) offline: ``integrity`` (order, versions, links), ``replay`` and ``shapes``
(every record decodes into its aggregate), ``invariants`` with ``rules``, ``evidence``,
``grounding``, ``answers``, ``bounds`` and ``rederive`` (SPEC §16 and the §10 table per run, the
EvidenceGuard's verdicts derived again).
"""

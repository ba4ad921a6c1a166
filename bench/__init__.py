"""Benchmarks that print ratios against a floor or reference measured in the same run.

Run each from the repository root as a module, e.g. ``.venv/bin/python -m bench.run --help``:
``bench.append`` (append throughput), ``bench.run`` (harness overhead per diagnosis run),
``bench.projections`` (read-side rebuild), ``bench.sse`` (live-feed latency), ``bench.metrics``
(the scrape cost of ``GET /metrics``), ``bench.throughput`` (runs/s and CPU per run over HTTP),
``bench.growth`` (reads, a run and memory as the store grows to N finished runs) and
``bench.peers`` (a full run against LangGraph's ReAct agent; the ``bench`` extra). What they share
is in :mod:`bench.common`; the bare eventsourcing floor is in :mod:`bench.floor`.
"""

"""This project's full diagnosis run beside LangGraph's prebuilt ReAct agent, on the same stores.

Run from the repository root (LangGraph, its checkpointers and ``langchain_openai`` are the
optional ``bench`` extra, pinned apart from the main lock)::

    .venv/bin/pip install -e '.[bench]' -c requirements/bench-constraints.txt
    .venv/bin/python -m bench.peers [--runs N] [--backend sqlite|postgres|both]
        [--model external|offline] [--ours-only]

For each backend (a fresh temporary directory of SQLite files; a fresh schema of the PostgreSQL
database ``harness_bench``, dropped at the end) it measures, in one process and interleaved in
rotating rounds so the machine's background work hits all alike:

* ``harness``: ``ChatService.ask`` through the composition root ``bootstrap``, answering the
  first sample incident's question over the sample data (5 tool calls), as ``bench.run`` sets
  it up;
* ``langgraph``: LangGraph's prebuilt ReAct agent (``create_react_agent``), a fresh thread per
  run, checkpointing every step with ``SqliteSaver`` (a file beside the project's) or
  ``PostgresSaver`` (its tables in the same fresh schema), with the default durability
  (``async``: a checkpoint is written while the next step runs);
* ``langgraph-sync``: the same with ``durability="sync"`` (each checkpoint written before the
  next step), when the installed LangGraph has it.

``--model external`` (the default, the headline) is a deployment's case: both systems call a
model over HTTP, :mod:`bench.model_stub` in a subprocess of its own, which answers at once. The
harness (``HARNESS_MODEL=openai``) gets the offline model's answers from it, so it makes the
same diagnosis and commits before every model call; LangGraph's ``ChatOpenAI`` gets the same
tool calls with the same arguments, one per turn, and the harness's conclusion as its answer,
and its tools are the harness's own sample-data tools (same SQL, same results). The harness
also routes and judges (8 model calls to LangGraph's 6). ``--model offline`` is the earlier
comparison: the harness's in-process offline model (a run commits twice) against a fake
zero-latency tool caller whose one tool returns a constant.

Per system it reports the run (p50, mean), the time inside its model calls (timed in this
process around each HTTP exchange; offline, around each model call), the run minus its model
time, the time inside its tools, and the process CPU per run (this process only: neither the
stub's nor PostgreSQL's); the ratio harness / LangGraph of the run minus model time is the one
with the target. The last lines are JSON, one object per measurement and per ratio. Without
the extra it exits 2 naming the install command; ``--ours-only`` measures the project's side
alone (no LangGraph needed).
"""

DEFAULT_RUNS = 200
WARM_UP = 10
ROUNDS = 5
TARGET = 0.5
"""The goal: a run minus its model time at most half of LangGraph's on the same store (p50)."""
OURS = "harness"
TOOL_CALLS = 5
INSTALL = ".venv/bin/pip install -e '.[bench]' -c requirements/bench-constraints.txt"

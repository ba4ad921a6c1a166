"""This project's full diagnosis run beside LangGraph's prebuilt ReAct agent, on the same stores.

Run from the repository root (LangGraph and its checkpointers are the optional ``bench`` extra,
pinned apart from the main lock)::

    .venv/bin/pip install -e '.[bench]' -c requirements/bench-constraints.txt
    .venv/bin/python -m bench.peers [--runs N] [--backend sqlite|postgres|both] [--ours-only]

For each backend (a fresh temporary directory of SQLite files; a fresh schema of the PostgreSQL
database ``harness_bench``, dropped at the end) it measures, in one process and interleaved in
rotating rounds so the machine's background work hits all alike:

* ``harness``: ``ChatService.ask`` through the composition root ``bootstrap``, the offline model
  over the sample data answering the first sample incident's question (5 tool calls), exactly
  as ``bench.run`` sets it up;
* ``langgraph``: LangGraph's prebuilt ReAct agent (``create_react_agent``) with a fake
  zero-latency chat model that calls one tool 5 times and then answers, a fresh thread per run,
  checkpointing every step with ``SqliteSaver`` (a file beside the project's) or
  ``PostgresSaver`` (its tables in the same fresh schema), with the default durability
  (``async``: a checkpoint is written while the next step runs);
* ``langgraph-sync``: the same with ``durability="sync"`` (each checkpoint written before the
  next step), when the installed LangGraph has it.

It prints p50 and p95 per measurement and the ratio harness / LangGraph per store; the last lines
are JSON, one object per measurement and per ratio. Without the extra it exits 2 naming the
install command; ``--ours-only`` measures the project's side alone (no LangGraph needed).
"""

DEFAULT_RUNS = 200
WARM_UP = 10
ROUNDS = 5
TARGET = 0.5
"""Issue 17's goal: a full run at most half of LangGraph's time on the same store (p50)."""
OURS = "harness"
TOOL_CALLS = 5
INSTALL = ".venv/bin/pip install -e '.[bench]' -c requirements/bench-constraints.txt"

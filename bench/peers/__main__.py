"""``python -m bench.peers``: parse the arguments, measure the chosen backends, report."""

from __future__ import annotations

import sys

from bench.common import add_backend, banner, chosen, parser
from bench.model_external import add_model
from bench.peers import DEFAULT_RUNS, INSTALL, ROUNDS
from bench.peers.measure import bench_backend  # imports LangGraph (bench.peers.peer) only if asked
from bench.peers.report import report


def missing_extra() -> str | None:
    """What of the ``bench`` extra cannot be imported, or None when all of it can."""
    for module in (
        "langgraph.prebuilt",
        "langgraph.checkpoint.sqlite",
        "langgraph.checkpoint.postgres",
        "langchain_core.language_models",
        "langchain_openai",
    ):
        try:
            __import__(module)
        except ImportError:
            return module
    return None


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the chosen backends, print the report."""
    arguments = parser("peers")
    arguments.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="runs per measurement")
    add_backend(arguments)
    add_model(arguments, "external")
    arguments.add_argument(
        "--ours-only", action="store_true", help="measure this project's run alone (no LangGraph)"
    )
    args = arguments.parse_args(argv)
    if not args.ours_only and (module := missing_extra()) is not None:
        print(
            f"bench.peers needs the optional 'bench' extra ({module} is not installed): {INSTALL}",
            file=sys.stderr,
        )
        raise SystemExit(2)
    runs: int = max(ROUNDS, args.runs)
    banner()
    measured = [
        bench_backend(backend, runs, args.ours_only, args.model) for backend in chosen(args.backend)
    ]
    report(measured, runs, args.model)


if __name__ == "__main__":
    main()

"""Dependencies point inward: no module of a lower layer imports a higher one.

Layers, lowest first: ``domain`` ← ``application`` ← ``infrastructure`` ← ``projections`` ←
``bootstrap`` ← ``api`` ← ``cli``. A layer may import itself and every layer below it, nothing
else; there is no special case. Every import of every module counts, wherever it stands (inside
functions, under ``TYPE_CHECKING``), because a lazy import is still a dependency.

``projections`` sits above ``infrastructure``: projections decide, infrastructure writes. Each
projection maps events to rows through the ``application.view_port`` protocols and imports neither
SQLAlchemy nor infrastructure (:data:`WRITE_THROUGH_VIEWS`); infrastructure defines the read
tables and writes them (``infrastructure.read_tables``, ``view_writer``). The runner joins the
projections to that SQL writer, and the queries read the tables, so those modules of
``projections`` import infrastructure; infrastructure never imports projections.

``bootstrap`` is the composition root (cosmicpython's ``bootstrap.py``): it builds the store,
providers, tools, projections and recovery for the app, the CLI, benches and tests, so it stands
above every adapter and the read side, and below the HTTP API and the command line that use it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from projections.runner import all_projections

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("domain", "application", "infrastructure", "projections", "bootstrap", "api", "cli")
ALLOWED: dict[str, frozenset[str]] = {
    layer: frozenset(LAYERS[: index + 1]) for index, layer in enumerate(LAYERS)
}


HELPERS = ("projections.base", "projections.analytics_rows", "projections.daily_stats")
WRITE_THROUGH_VIEWS = sorted({*HELPERS, *(type(p).__module__ for p in all_projections())})
"""The projections and their helpers: events to rows, through ``application.view_port`` only."""
SQL_SIDE = ("infrastructure", "sqlalchemy", "psycopg")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.AST, module: str) -> set[str]:
    """Every module name an import statement of ``tree`` names (relative ones resolved)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: -node.level]
                base = ".".join([*package, base] if base else package)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _layer(name: str) -> str | None:
    """The layer a module of ours belongs to; None for others (the standard library, packages)."""
    top = name.split(".")[0]
    return top if top in LAYERS else None


def violations_of(module: str, names: set[str]) -> list[str]:
    """``module -> name`` for each of ``names`` (what ``module`` imports) in a higher layer."""
    importer = _layer(module)
    assert importer is not None, module
    found = []
    for name in sorted(names):
        target = _layer(name)
        if target is not None and target not in ALLOWED[importer]:
            if name.rpartition(".")[0] not in names:  # `from x import y`: say x once
                found.append(f"{module} -> {name}")
    return found


def violations() -> list[str]:
    """``module -> imported`` for every import that points outward."""
    found = []
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = _module_name(path)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            found += violations_of(module, _imported(tree, module))
    return found


def test_no_module_imports_a_higher_layer() -> None:
    assert violations() == []


def test_projections_write_only_through_the_view_protocol() -> None:
    assert len(WRITE_THROUGH_VIEWS) == 10  # three helpers and the seven projections
    found = []
    for module in WRITE_THROUGH_VIEWS:
        path = ROOT / Path(*module.split(".")).with_suffix(".py")
        names = _imported(ast.parse(path.read_text(encoding="utf-8")), module)
        found += [f"{module} -> {n}" for n in sorted(names) if n.split(".")[0] in SQL_SIDE]
    assert found == []


def test_the_check_sees_imports_inside_functions_and_type_checking_blocks() -> None:
    source = """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from projections.runner import Projector
def later():
    import api.main
    from ..bootstrap import composition
"""
    names = _imported(ast.parse(source), "infrastructure.live")
    assert {"projections.runner", "api.main", "bootstrap.composition"} <= names
    assert {"projections", "api", "bootstrap"} <= {_layer(name) for name in names}
    assert violations_of("infrastructure", names) == [
        "infrastructure -> api.main",
        "infrastructure -> bootstrap",
        "infrastructure -> projections.runner",
    ]


# -- one composition root ---------------------------------------------------------------------

CONSTRUCTORS = frozenset(
    {"open_store", "init_store", "create_sql_engine", "HarnessStore", "ChatService"}
)
"""What opens an event store or a read-side engine, or builds the chat service on them: only the
composition root calls these."""
BUILDERS = {
    "bootstrap/composition.py": "the composition root",
    "infrastructure/eventstore.py": "defines open_store / init_store",
    "infrastructure/database.py": "defines create_sql_engine",
}


def _calls(tree: ast.AST) -> set[str]:
    """The names of every function called by name or attribute in ``tree``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.add(func.id)
            elif isinstance(func, ast.Attribute):
                found.add(func.attr)
    return found


def constructions(folders: tuple[str, ...] = (*LAYERS, "bench")) -> list[str]:
    """``file: name`` for every store or engine constructed outside the composition root."""
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in BUILDERS:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            found += [f"{relative}: {name}" for name in sorted(_calls(tree) & CONSTRUCTORS)]
    return found


def test_only_the_composition_root_opens_stores_and_engines() -> None:
    assert constructions() == []


NO_READ_SIDE = "a log without the read side, which bootstrap(create=True) would create"
TESTS_ABOUT_THE_THING = {
    "tests/integration/store/test_store.py: open_store": (
        "open_store refuses a store before db init"
    ),
    "tests/integration/store/test_store.py: init_store": (
        "init_store ignores the process environment"
    ),
    "tests/integration/store/test_bootstrap.py: init_store": (
        "a store bootstrap is given, left open"
    ),
    "tests/integration/cli/test_cli_projections.py: init_store": NO_READ_SIDE,
    "tests/integration/cli/test_cli_runs.py: init_store": NO_READ_SIDE,
    "tests/integration/diagnosis/test_knowledge.py: create_sql_engine": (
        "an engine on a schema that does not exist, which bootstrap refuses to open"
    ),
}
"""The tests that construct a store or an engine themselves, and why; every other test goes
through the composition root (``bootstrap`` and its ``Overrides``), as the app does."""


def test_tests_open_stores_and_engines_through_the_composition_root() -> None:
    assert sorted(constructions(("tests",))) == sorted(TESTS_ABOUT_THE_THING)


def test_the_construction_check_sees_a_call_by_attribute() -> None:
    source = "import infrastructure.eventstore as es\nstore = es.open_store(settings)\n"
    assert _calls(ast.parse(source)) >= {"open_store"}

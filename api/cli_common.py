"""What the ``harness`` commands share: the console, settings and the one way to fail."""

from __future__ import annotations

from typing import NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console

from infrastructure.settings import Settings

console = Console(stderr=True)
"""Messages go to stderr; results (tables, answers) to stdout."""


def load_settings() -> Settings:
    """The settings from HARNESS_* variables; exit 2 naming every invalid one."""
    try:
        return Settings()
    except ValidationError as error:
        problems = "; ".join(
            f"HARNESS_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}"
            for e in error.errors()
        )
        fail(f"invalid configuration: {problems}")


def fail(message: str) -> NoReturn:
    """Print ``message`` as an error and exit 2."""
    console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=2)

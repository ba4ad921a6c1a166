"""The ``harness`` Typer app: plain help, one-line errors, and ``--debug`` for tracebacks."""

from __future__ import annotations

import logging
import os
import sys
from typing import Annotated, Any, NoReturn

import typer
import typer.main
from rich.text import Text

# Typer builds its commands with a click of its own: catch that click's exceptions.
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

from cli.common import err_console

DEBUG_VARIABLE = "HARNESS_DEBUG"
MAX_MESSAGE = 500
"""Characters of an unexpected error's message shown on its one line."""


def debugging() -> bool:
    """Whether tracebacks were asked for (``--debug`` or ``HARNESS_DEBUG=1``)."""
    return os.environ.get(DEBUG_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


def one_line(error: BaseException) -> str:
    """``Type: message`` on one line, bounded."""
    message = " ".join(str(error).split())
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


class OneLineFormatter(logging.Formatter):
    """A log record on one line; an exception is named on it, its traceback only when debugging."""

    def format(self, record: logging.LogRecord) -> str:
        """``level: message[: ExceptionType: message]``."""
        text = f"{record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            if debugging():
                return text + "\n" + self.formatException(record.exc_info)
            return f"{text}: {one_line(record.exc_info[1])}"
        return text


ANNOUNCING = ("infrastructure.tool_sources",)
"""Loggers whose information is for the operator too: the tools admitted at start."""


def configure_logging() -> None:
    """Warnings and errors of the harness's own modules on stderr, one line each.

    The start-up summary of the tools (one line per source) is said too, at ``info``.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    for name in ANNOUNCING:
        logging.getLogger(name).setLevel(logging.INFO)


def _show_version(wanted: bool) -> None:
    """``--version``: ``harness X.Y.Z`` on stdout, then exit 0 (before any command runs)."""
    if wanted:
        from infrastructure.version import harness_version

        print(f"harness {harness_version()}")
        raise typer.Exit(0)


def _options(
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show tracebacks of unexpected errors (or HARNESS_DEBUG=1)."),
    ] = False,
    _version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Diagnosis Harness."""
    if debug:
        os.environ[DEBUG_VARIABLE] = "1"  # read again where an error is reported
    configure_logging()


def _no_type(ctx: Any) -> None:
    return None


def _plain_metavars(command: Any) -> None:
    """Name each value after its option or argument (``--port PORT``), not its type (``<int>``).

    Duck-typed: Typer builds its commands with a click of its own.
    """
    for param in command.params:
        if param.metavar is not None or getattr(param, "is_flag", False):
            continue
        if param.param_type_name == "argument":
            param.metavar = param.name.upper()
            param.display_type_rich = _no_type  # Typer adds "<str>" after an argument's name
        else:
            param.metavar = max(param.opts, key=len).lstrip("-").replace("-", "_").upper()
    for sub in getattr(command, "commands", {}).values():
        _plain_metavars(sub)


class HarnessTyper(typer.Typer):
    """A Typer app whose unexpected errors end in one line (exit 1), never a traceback."""

    def __init__(self, **kwargs: Any) -> None:
        """Plain help (no metavar noise), no completion commands, no rich tracebacks."""
        super().__init__(
            no_args_is_help=True,
            add_completion=False,
            pretty_exceptions_enable=False,
            rich_markup_mode=None,
            **kwargs,
        )
        self.callback()(_options)

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Run the command line and exit: 0 done, 1 failed, 2 bad input (each error one line)."""
        command = typer.main.get_command(self)
        _plain_metavars(command)
        kwargs.setdefault("prog_name", "harness")
        kwargs["standalone_mode"] = False  # errors come back here, to be said in one line
        try:
            code = command.main(*args, **kwargs)
        except NoArgsIsHelpError as usage:
            usage.show()  # the help, as click shows it
            sys.exit(usage.exit_code)
        except UsageError as usage:
            where = usage.ctx.command_path if usage.ctx is not None else "harness"
            _error(f"{usage.format_message()} (see `{where} --help`)")
            sys.exit(usage.exit_code)
        except ClickException as failed:
            _error(failed.format_message())
            sys.exit(failed.exit_code)
        except typer.Abort:
            _error("aborted")
            sys.exit(1)
        except Exception as error:
            if debugging():
                raise
            _error(
                f"unexpected {one_line(error)} (run with --debug or {DEBUG_VARIABLE}=1 for the"
                " traceback)"
            )
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def _error(message: str) -> None:
    err_console().print(Text.assemble(("error:", "bold red"), " ", " ".join(message.split())))

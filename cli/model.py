"""``harness model check``: probe the configured model provider, a pass/fail line per capability."""

from __future__ import annotations

import typer

from cli.common import fail, load_settings, out_console

model_app = typer.Typer(help="Check the configured model provider.", no_args_is_help=True)


@model_app.command("check")
def check() -> None:
    """Probe the configured provider (HARNESS_MODEL=openai) for what the harness relies on.

    Reachable, model known, strict structured output for each schema the harness sends, tool
    calling, and the latency of a small call. Prints PASS or FAIL and what was seen for each;
    exits 1 when any capability fails, 2 on a configuration error. The offline and scripted
    models need no check.
    """
    from infrastructure.model_check import check_configured

    settings = load_settings()
    try:
        found = check_configured(settings)
    except ValueError as error:
        fail(str(error))
    if found is None:
        out_console().print(f"HARNESS_MODEL={settings.model}: in-process, nothing to check")
        return
    console = out_console()
    for capability in found:
        mark = "PASS" if capability.passed else "FAIL"
        console.print(f"{mark}  {capability.name}: {capability.detail}", markup=False)
    if not all(c.passed for c in found):
        raise typer.Exit(code=1)

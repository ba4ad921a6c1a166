"""The README and the docs site: short, true to the code, built strictly and offline."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import typer.main
import yaml
from pydantic import Field

from infrastructure.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TWO_COMMANDS = (  # the README's quick start, word for word: one serves, one runs every test
    "scripts/serve   # install and run the service on http://127.0.0.1:8000"
    " (SQLite file ./harness.db)",
    "scripts/test    # install with dev extras (and Debian's chromium for tests/browser"
    " when missing),",
)


def _gen_refs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_refs", DOCS / "gen_refs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_the_generated_references_are_what_the_code_says_now() -> None:
    for path, text in _gen_refs().references().items():
        assert path.read_text() == text, f"{path.name} is stale: run python docs/gen_refs.py"
    check = [sys.executable, "docs/gen_refs.py", "--check"]
    assert subprocess.run(check, cwd=ROOT, capture_output=True, timeout=60).returncode == 0


def test_every_setting_is_in_the_configuration_reference_with_its_description() -> None:
    table = (DOCS / "reference" / "_generated" / "settings.md").read_text()
    for name, field in Settings.model_fields.items():
        row = next(line for line in table.splitlines() if f"`HARNESS_{name.upper()}`" in line)
        assert " ".join((field.description or "").split()).replace("|", "\\|") in row
    page = (DOCS / "reference" / "configuration.md").read_text()
    assert '--8<-- "reference/_generated/settings.md"' in page


def test_a_setting_added_to_the_model_makes_the_reference_stale() -> None:
    class Wider(Settings):
        brand_new: int = Field(default=7, ge=2, description="A setting nobody documented yet.")

    table = _gen_refs().settings_markdown(Wider)
    assert "| `HARNESS_BRAND_NEW` | `7` | ≥ 2 | A setting nobody documented yet. |" in table
    assert table != (DOCS / "reference" / "_generated" / "settings.md").read_text()


def _command_paths(command: object, path: str) -> list[str]:
    children = getattr(command, "commands", {})
    found = [path]
    for name, child in children.items():
        if not child.hidden:
            found += _command_paths(child, f"{path} {name}")
    return found


def test_every_command_is_in_the_cli_reference_with_its_options() -> None:
    from cli.main import app

    reference = (DOCS / "reference" / "_generated" / "cli.md").read_text()
    paths = _command_paths(typer.main.get_command(app), "harness")
    assert len(paths) > 25  # the whole tree, groups and commands
    headings = re.findall(r"^## `(.*)`$", reference, flags=re.M)
    assert sorted(headings) == sorted(paths)
    for option in ("--sample", "--session", "--workers", "--key-file", "--min-correct"):
        assert f"`{option}" in reference
    page = (DOCS / "reference" / "cli.md").read_text()
    assert '--8<-- "reference/_generated/cli.md"' in page


def test_the_site_builds_strictly_and_fetches_nothing(tmp_path: Path) -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    assert config["strict"] == "true" and config["theme"]["font"] == "false"
    assert config["plugins"] == ["search"]  # no social or privacy plugin: nothing is fetched
    assert "mermaid" not in str(config["markdown_extensions"])  # its script would come from a CDN
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)]
    done = subprocess.run(build, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    reference = tmp_path / "reference"
    assert "HARNESS_DATABASE_URL" in (reference / "configuration" / "index.html").read_text()
    assert "harness audit verify" in (reference / "cli" / "index.html").read_text()
    script = (ROOT / "scripts" / "test").read_text().splitlines()
    build_line = (
        "NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir .venv/site"
    )
    assert build_line in script
    assert ".venv/bin/python docs/gen_refs.py --check" in script


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    site = tmp_path / "project"
    site.mkdir()
    subprocess.run(["cp", "-r", str(DOCS), str(site)], check=True)
    (site / "mkdocs.yml").write_text((ROOT / "mkdocs.yml").read_text())
    page = site / "docs" / "audit.md"
    page.write_text(page.read_text() + "\nSee [the missing page](nowhere.md).\n")
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")]
    done = subprocess.run(build, cwd=site, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "nowhere.md" in done.stderr


def test_the_readme_fits_and_keeps_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 350
    for command in TWO_COMMANDS:
        assert command in readme.splitlines()
        assert command in (DOCS / "index.md").read_text().splitlines()


def test_every_relative_link_of_the_readme_reaches_a_file() -> None:
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    local = [target for target in targets if not target.startswith(("http://", "https://"))]
    assert len(local) > 15
    assert [target for target in local if not (ROOT / target).exists()] == []


def test_no_page_names_a_tracker_issue() -> None:
    for page in _pages():
        found = re.findall(r"\bissues? \d+|\(#\d+\)", page.read_text(), flags=re.I)
        assert found == [], f"{page.relative_to(ROOT)}: {found}"

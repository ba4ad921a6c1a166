# Sourced by scripts/serve and scripts/test: make ./.venv once, and install the project into it,
# every version pinned by requirements/constraints.txt, only when pyproject.toml, that lock file
# or the extras asked for changed since the last install.
# Refresh the lock after changing pyproject.toml's dependencies with the pip-compile command in
# the README's Development section (it is also in the lock file's header).
ensure_venv() {
  local spec="$1" stamp=".venv/.installed${1#.}" constraints="requirements/constraints.txt"
  local python="${PYTHON:-python3}"
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  local want
  want="$spec $(cat pyproject.toml "$constraints" | sha256sum | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check \
      -c "$constraints" -e "$spec"
    echo "$want" > "$stamp"
  fi
}

# The tools the tests run as commands but the project does not import, each pinned in
# requirements/tools-constraints.txt (from requirements/tools.in), in a venv of their own inside
# ./.venv (.venv/tools): openapi-python-client, which pins typer and httpx below the project's.
ensure_tools() {
  local constraints="requirements/tools-constraints.txt" stamp=".venv/tools/.installed"
  local want
  want="$(sha256sum "$constraints" | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m venv --clear .venv/tools
    .venv/tools/bin/python -m pip install --quiet --disable-pip-version-check -r "$constraints"
    echo "$want" > "$stamp"
  fi
}

# Sourced by scripts/serve and scripts/test: make ./.venv once, and install the project into it
# only when pyproject.toml (or the extras asked for) changed since the last install.
ensure_venv() {
  local spec="$1" stamp=".venv/.installed${1#.}"
  local python="${PYTHON:-python3}"
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  local want
  want="$spec $(sha256sum pyproject.toml | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$spec"
    echo "$want" > "$stamp"
  fi
}

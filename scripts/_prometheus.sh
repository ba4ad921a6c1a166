# Sourced by scripts/test: Debian's prometheus package, whose promtool checks docs/ops/alerts.yml
# and a scrape, and whose server tests/integration/ops runs against the service. Installed with
# apt-get when /usr/bin/promtool or /usr/bin/prometheus is missing (idempotent); the package
# starts no server here (no init system runs it).
ensure_prometheus() {
  [ -x /usr/bin/promtool ] && [ -x /usr/bin/prometheus ] && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  if ! command -v apt-get >/dev/null 2>&1 \
    || ! { $sudo apt-get update -qq \
      && $sudo apt-get install -y -qq --no-install-recommends prometheus; } \
      >/tmp/harness-prometheus-install.log 2>&1; then
    echo "cannot install prometheus with apt-get (needed by tests/integration/ops; see /tmp/harness-prometheus-install.log): install it, then run scripts/test again" >&2
    return 1
  fi
}

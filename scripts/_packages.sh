# Sourced by scripts/test: the Debian packages the tests drive as programs, installed with
# apt-get when one of their programs is missing (idempotent: nothing happens when all are there).
#   chromium + chromium-driver  tests/browser (through Selenium)
#   prometheus                  tests/integration/ops (promtool, and the server; the install
#                               starts none here: no init system runs it)

# ensure_packages WHAT PROGRAM... -- APT-ARGUMENT...: install the packages (apt-get install
# arguments, options allowed) unless every PROGRAM exists; on failure one line naming WHAT needs
# them and the log, and status 1.
ensure_packages() {
  local what="$1" missing="" sudo="" log argument packages=""
  shift
  while [ "$1" != "--" ]; do
    [ -x "$1" ] || missing="$1"
    shift
  done
  shift
  [ -z "$missing" ] && return 0
  log="/tmp/harness-packages.log"
  for argument in "$@"; do
    case "$argument" in -*) ;; *) packages="${packages:+$packages }$argument" ;; esac
  done
  [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  if ! command -v apt-get >/dev/null 2>&1 \
    || ! { $sudo apt-get update -qq \
      && $sudo apt-get install -y -qq "$@"; } >"$log" 2>&1; then
    echo "cannot install $packages with apt-get (needed by $what; see $log): install them, then run scripts/test again" >&2
    return 1
  fi
}

ensure_browser() {
  ensure_packages tests/browser /usr/bin/chromium /usr/bin/chromedriver -- chromium chromium-driver
}

ensure_prometheus() {
  ensure_packages tests/integration/ops /usr/bin/promtool /usr/bin/prometheus \
    -- --no-install-recommends prometheus
}

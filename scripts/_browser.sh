# Sourced by scripts/test: the headless browser of tests/browser, from Debian's packages.
# Installs chromium and chromium-driver with apt-get when /usr/bin/chromium or
# /usr/bin/chromedriver is missing (idempotent: nothing happens when both are there).
ensure_browser() {
  [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  if ! command -v apt-get >/dev/null 2>&1 \
    || ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium chromium-driver; } \
      >/tmp/harness-browser-install.log 2>&1; then
    echo "cannot install chromium and chromium-driver with apt-get (needed by tests/browser; see /tmp/harness-browser-install.log): install them, then run scripts/test again" >&2
    return 1
  fi
}

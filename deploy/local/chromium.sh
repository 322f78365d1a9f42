# Chromium and its WebDriver from Debian's packages, for the browser tests (tests/browser.rs)
# and the benchmark's page measurements. Sourced by lib.sh; defines
# chromium_{running,prepare,start,wait,ready,down} so up.sh treats it like a service: "running"
# means installed, there is no daemon (each test starts its own chromedriver on a free port).
# Run directly (`deploy/local/chromium.sh`) it only installs.
# Gives /usr/bin/chromium and /usr/bin/chromedriver (FRONTROW_CHROMIUM / FRONTROW_CHROMEDRIVER
# point the tests elsewhere).

CHROMIUM_BIN=${FRONTROW_CHROMIUM:-/usr/bin/chromium}
CHROMEDRIVER_BIN=${FRONTROW_CHROMEDRIVER:-/usr/bin/chromedriver}

chromium_running() { [ -x "$CHROMIUM_BIN" ] && [ -x "$CHROMEDRIVER_BIN" ]; }

chromium_prepare() {
  chromium_running && return 0
  apt_install chromium chromium-driver
  chromium_running || die "chromium: no $CHROMIUM_BIN and $CHROMEDRIVER_BIN after installing chromium chromium-driver"
}

chromium_start() { :; }

chromium_ready() { "$CHROMEDRIVER_BIN" --version >/dev/null 2>&1; }

chromium_wait() {
  chromium_ready || die "chromium: $CHROMEDRIVER_BIN --version fails"
  log "chromium: ready ($("$CHROMIUM_BIN" --version 2>/dev/null | head -n 1), $("$CHROMEDRIVER_BIN" --version | head -n 1 | cut -d' ' -f1-2))"
}

chromium_down() { :; }

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  # Executed, not sourced: install (lib.sh sources this file again for the functions).
  . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
  chromium_prepare
  chromium_wait
fi

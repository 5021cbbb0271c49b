# Sourced by scripts/test.sh: make Debian's Chromium available for the browser tests (tests/browser/, marker
# `browser`). Playwright's own browser download is not used; the tests launch /usr/bin/chromium. Installs the
# `chromium` package only when it is missing and this runs as root with apt-get available; otherwise the browser
# tests skip with a reason. Idempotent and quiet (one line of output).
ensure_chromium() {
  local chromium="${OWLAT_CHROMIUM:-/usr/bin/chromium}"
  if [ -x "$chromium" ]; then
    echo "== chromium: $chromium"
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing Debian's chromium for the browser tests (apt-get)"
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/tmp/owlat-chromium-install.log 2>&1 ||
      { apt-get update -qq >>/tmp/owlat-chromium-install.log 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >>/tmp/owlat-chromium-install.log 2>&1; }; then
      return 0
    fi
    echo "   chromium could not be installed (see /tmp/owlat-chromium-install.log): browser tests will be skipped"
  else
    echo "== chromium missing ($chromium): browser tests will be skipped (install Debian's chromium package)"
  fi
  return 0
}

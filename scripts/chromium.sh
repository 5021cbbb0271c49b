# Sourced by scripts/test.sh: the Debian programs some tests drive, installed when missing and this runs as root
# with apt-get available; otherwise those tests skip with a reason. Idempotent and quiet (one line each).
# - chromium: the browser tests (tests/browser/, marker `browser`) launch /usr/bin/chromium (Playwright's own
#   browser download is not used);
# - spamassassin: the deliverability test scores one message of each class with its shipped local rules.
ensure_debian_program() { # PROGRAM PACKAGE PURPOSE
  local program="$1" package="$2" purpose="$3" log="/tmp/owlat-$2-install.log"
  if [ -x "$program" ] || command -v "$program" >/dev/null 2>&1; then
    echo "== $package: $(command -v "$program" || echo "$program")"
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing Debian's $package for $purpose (apt-get)"
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package" >"$log" 2>&1 ||
      { apt-get update -qq >>"$log" 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package" >>"$log" 2>&1; }; then
      return 0
    fi
    echo "   $package could not be installed (see $log): $purpose will be skipped"
  else
    echo "== $package missing ($program): $purpose will be skipped (install Debian's $package package)"
  fi
  return 0
}

ensure_chromium() {
  ensure_debian_program "${OWLAT_CHROMIUM:-/usr/bin/chromium}" chromium "the browser tests"
  ensure_debian_program spamassassin spamassassin "the SpamAssassin deliverability test"
}

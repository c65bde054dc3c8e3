#!/usr/bin/env bash
# Sourced by .ci/run: defines chromium_start and chromium_stop.
#
# chromium_start installs Debian's `chromium` package when no Chromium is
# on PATH (the browser tests of outbox/outboxweb drive it headless through
# chromedp, starting their own instance), and exports WAPACE_ARTIFACTS (the
# directory the tests save their screenshots under) unless it is set.
# chromium_stop does nothing: the tests end their browsers.

_chromium_bin() {
  local n
  for n in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$n" >/dev/null 2>&1; then command -v "$n"; return 0; fi
  done
  return 1
}

chromium_start() {
  if ! _chromium_bin >/dev/null; then
    echo "chromium: installing the Debian chromium package"
    if [ "$(id -u)" -eq 0 ]; then
      DEBIAN_FRONTEND=noninteractive apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
      sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq
      sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    fi
  fi
  echo "chromium: $(_chromium_bin) ($("$(_chromium_bin)" --version 2>/dev/null || echo 'version unknown'))"
  if [ -z "${WAPACE_ARTIFACTS:-}" ]; then
    WAPACE_ARTIFACTS="$(mktemp -d "${TMPDIR:-/tmp}/wapace-artifacts.XXXXXX")"
    export WAPACE_ARTIFACTS
  fi
  echo "chromium: screenshots under $WAPACE_ARTIFACTS"
}

chromium_stop() { :; }

#!/usr/bin/env bash
# Debian's packages the tests drive beside Node: `chromium` for the dashboard's browser tests
# (test/support/browser.ts) and `prometheus` with `promtool` for the operations tests
# (test/support/prometheus.ts) and .ci/run's rule check. Installed with apt-get when missing and
# this user may (root, or sudo without a password); otherwise this stops, before any test runs,
# with the one command that installs them. SMS_TEST_SKIP_BROWSER=1 / SMS_TEST_SKIP_PROMETHEUS=1
# leave a tool out, and its tests are then skipped; CI sets neither. scripts/test-tools.sh runs
# this first, so `npm test` (its pretest) and .ci/run share it.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

# The same search as test/support/browser.ts: CHROMIUM_PATH, else these names on the PATH.
have_chromium() {
  [[ -n ${CHROMIUM_PATH:-} && -x ${CHROMIUM_PATH} ]] || have chromium || have chromium-browser ||
    have google-chrome
}

have_prometheus() { have prometheus && have promtool; }

# The Debian packages missing, and the variable that would skip each one's tests instead.
find_missing() {
  missing=()
  skips=()
  if [[ ${SMS_TEST_SKIP_BROWSER:-} != 1 ]] && ! have_chromium; then
    missing+=(chromium)
    skips+=(SMS_TEST_SKIP_BROWSER=1)
  fi
  if [[ ${SMS_TEST_SKIP_PROMETHEUS:-} != 1 ]] && ! have_prometheus; then
    missing+=(prometheus)
    skips+=(SMS_TEST_SKIP_PROMETHEUS=1)
  fi
}

find_missing
[[ ${#missing[@]} -eq 0 ]] && exit 0

as_root=()
may_install=true
if [[ $(id -u) -ne 0 ]]; then
  if have sudo && sudo -n true 2>/dev/null; then as_root=(sudo -n); else may_install=false; fi
fi

if ! have apt-get; then
  reason="this machine has no apt-get"
elif ! $may_install; then
  reason="this user may not install them (not root, and no sudo without a password)"
else
  echo "test tools: installing ${missing[*]} (Debian packages, apt-get)"
  if "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; then
    find_missing
    [[ ${#missing[@]} -eq 0 ]] && exit 0
  fi
  reason="apt-get did not install them"
fi

{
  echo "test tools: the tests need ${missing[*]} (Debian packages), which are not installed, and $reason."
  echo "Install them with:"
  echo
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}"
  echo
  echo "then run npm test again; or skip the tests that need them: ${skips[*]} npm test"
} >&2
exit 1

#!/usr/bin/env bash
# The tools the test suite runs beside vitest. `npm test` runs this first (pretest), so
# `npm install && npm test` works on a fresh machine; .ci/run too. First Debian's packages
# (scripts/system-tools.sh: Chromium and Prometheus, installed where this user may, else it stops
# here, before any test, saying how to install them); then, from PyPI, installed once into a cache
# outside the work tree (biome would lint a virtual environment inside it): schemathesis for the
# API fuzz run (test/rest/openapi-fuzz.test.ts) and the Python example's packages (test/clients).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-tools.sh
cache="${XDG_CACHE_HOME:-$HOME/.cache}/sms-service"

# Installs `packages` (pip arguments) into the virtual environment `dir`, unless the same ones are
# there already (a stamp of the arguments and of the files they name).
ensure_venv() {
  local dir=$1 stamp
  shift
  stamp=$(printf '%s\n' "$@" | cat - $(printf '%s\n' "$@" | grep -o 'examples/[^ ]*' || true) | sha256sum | cut -c1-16)
  [[ -f $dir/.installed-$stamp ]] && return 0
  echo "test tools: installing $* into $dir (from PyPI, once)"
  [[ -x $dir/bin/python ]] || python3 -m venv "$dir"
  "$dir/bin/pip" install -q --disable-pip-version-check "$@"
  touch "$dir/.installed-$stamp"
}

ensure_venv "$cache/schemathesis" "schemathesis==4.32.5"
ensure_venv "$cache/python-example" -r examples/python/requirements.txt

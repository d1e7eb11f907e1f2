#!/usr/bin/env bash
# Installs what oxwright needs on a Debian 12 machine, idempotently:
# Chromium (the browser every job drives), Xvfb (headed-mode tests), fonts,
# and cargo-nextest (the test runner). Safe to run again.
set -euo pipefail

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v Xvfb >/dev/null 2>&1 || need_apt+=(xvfb xauth)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need_apt+=(fonts-dejavu-core)

if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "infra/install.sh: installing ${need_apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if ! cargo nextest --version >/dev/null 2>&1; then
  echo "infra/install.sh: installing cargo-nextest" >&2
  cargo install --locked cargo-nextest
fi

# The official Python MCP SDK, which the MCP server tests drive `oxwright mcp` with.
VENV="$(dirname "$0")/.venv"
REQS="$(dirname "$0")/requirements-test.txt"
if ! "$VENV/bin/python" -c 'import mcp' >/dev/null 2>&1 || ! cmp -s "$REQS" "$VENV/.requirements"; then
  echo "infra/install.sh: installing the test Python packages into infra/.venv" >&2
  if ! python3 -m venv --help >/dev/null 2>&1; then
    [ "$(id -u)" -eq 0 ] && S="" || S="sudo"
    $S apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends python3 python3-venv >/dev/null
  fi
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQS"
  cp "$REQS" "$VENV/.requirements"
fi

chromium --version >&2

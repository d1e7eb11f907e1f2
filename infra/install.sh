#!/usr/bin/env bash
# Installs what oxwright needs on a Debian 12 machine, idempotently:
# Chromium (the browser every job drives), Xvfb (headed-mode tests), fonts,
# Node.js with the pinned @playwright/mcp server (the second engine,
# lib/playwright_mcp; it drives Debian Chromium and downloads no browser),
# cargo-nextest (the test runner), and, as root, the unprivileged account
# the sandbox test runs a fetch as. Safe to run again.
set -euo pipefail

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v Xvfb >/dev/null 2>&1 || need_apt+=(xvfb xauth)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need_apt+=(fonts-dejavu-core)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)

if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "infra/install.sh: installing ${need_apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# The Playwright MCP server and @playwright/test (which re-runs the specs
# `oxwright codegen` writes), exactly as package-lock.json pins them. npm ci
# runs again only when the lock file changed since the last install.
node_dir="$(dirname "$0")/node"
if ! cmp -s "$node_dir/package-lock.json" "$node_dir/node_modules/.package-lock.json.installed" 2>/dev/null; then
  echo "infra/install.sh: installing @playwright/mcp and @playwright/test into infra/node" >&2
  (cd "$node_dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$node_dir/package-lock.json" "$node_dir/node_modules/.package-lock.json.installed"
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

# An unprivileged account, for the test that runs a fetch with Chromium's
# sandbox on (Chromium refuses its sandbox to root). No login, no home.
if [ "$(id -u)" -eq 0 ] && ! id oxwright-sandbox >/dev/null 2>&1; then
  echo "infra/install.sh: creating the unprivileged account oxwright-sandbox" >&2
  useradd --system --no-create-home --shell /usr/sbin/nologin oxwright-sandbox
fi

chromium --version >&2
echo "@playwright/mcp $(node "$node_dir/node_modules/@playwright/mcp/cli.js" --version)" >&2

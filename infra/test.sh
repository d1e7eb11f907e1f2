#!/usr/bin/env bash
# Runs the whole test suite against real Chromium (installed if missing).
# This is the command README.md gives and .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/install.sh
cargo nextest run --workspace --locked --no-fail-fast "$@"

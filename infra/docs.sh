#!/usr/bin/env bash
# Builds the manual (docs/, an mdBook) into docs/book/ and checks the links
# of README.md and docs/src/**/*.md (infra/check_links.py): every link is a
# relative path to a file of the repository, every #anchor a heading of it,
# and nothing links to the internet. Installs mdbook with cargo when it is
# not on PATH (a pinned version, without the serve/watch features).
set -euo pipefail
cd "$(dirname "$0")/.."
MDBOOK_VERSION=0.4.52
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v mdbook >/dev/null 2>&1; then
    echo "docs: installing mdbook $MDBOOK_VERSION"
    cargo install mdbook --version "$MDBOOK_VERSION" --locked \
        --no-default-features --features search
fi
have=$(mdbook --version)
if [ "$have" != "mdbook v$MDBOOK_VERSION" ]; then
    echo "docs: $have on PATH, the book is checked with v$MDBOOK_VERSION" >&2
fi
mdbook build docs
python3 infra/check_links.py

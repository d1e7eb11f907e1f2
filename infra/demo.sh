#!/usr/bin/env bash
# The embedded default, end to end on one machine: installs Chromium if
# missing, builds oxwright, serves the bundled sample site on loopback,
# fetches it as a batch, and says where the Markdown went.
set -euo pipefail
cd "$(dirname "$0")/.."
bash infra/install.sh
cargo build --release --locked -p oxwright
bin=target/release/oxwright
port=${OXWRIGHT_DEMO_PORT:-8765}
out=${OXWRIGHT_OUT:-$PWD/oxwright-out}
urls=$(mktemp)

"$bin" sample-site --listen "127.0.0.1:$port" --write-urls "$urls" &
site=$!
trap 'kill "$site" 2>/dev/null || true; wait "$site" 2>/dev/null || true; rm -f "$urls"' EXIT
for _ in $(seq 1 100); do [ -s "$urls" ] && break; sleep 0.1; done

"$bin" --allow-host "127.0.0.1:$port" --out "$out" batch "$urls"

manifest=$(ls -t "$out"/batches/*/manifest.jsonl | head -n 1)
first=$(grep -o '"jobs/fetch/[^"]*/page.md"' "$manifest" | head -n 1 | tr -d '"')
echo
echo "Markdown is in $out/jobs/fetch/<job-id>/page.md; the manifest is $manifest"
echo "For example, $out/$first begins:"
head -n 12 "$out/$first"

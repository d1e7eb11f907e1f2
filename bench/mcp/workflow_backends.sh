#!/usr/bin/env bash
# Workflow per-step time on the two engine backends: the structured flow
# (login → search → item → select), run with `oxwright run --json` on the
# Chromium pool and on the Playwright MCP backend, interleaved; prints the
# median step duration and the median run from process start to result.
#   target/release/oxwright sample-site --listen 127.0.0.1:8765 &
#   bash bench/mcp/workflow_backends.sh [ROUNDS] [BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${1:-3}"
BIN="${2:-target/release/oxwright}"
BASE="${BASE:-http://127.0.0.1:8765}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/flow.txt" <<'FLOW'
fill: textbox "Username" = alice
fill: textbox "Password" = {{PASSWORD}}
click: button "Sign in"
fill: searchbox "Search products" = rust
click: button "Search"
click: link "Rust in Action"
select: combobox "Shipping country" = Japan
expect: text "Ships to Japan"
FLOW
export OXWRIGHT_SECRET_PASSWORD='Tr0ub4dor&3-horse'
for i in $(seq "$ROUNDS"); do
  for b in chromium playwright-mcp; do
    t0=$(date +%s%N)
    out=$("$BIN" --allow-host 127.0.0.1 --out "$WORK/out" run "$WORK/flow.txt" --url "$BASE/app/login" --browser "$b" --json 2>/dev/null || true)
    wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    printf '%s' "$out" \
      | python3 -c 'import json,sys; j=json.load(sys.stdin); print(sys.argv[1], j["status"], sys.argv[2], *[s["duration_ms"] for s in j["steps"]])' "$b" "$wall_ms"
  done
done | python3 -c '
import sys, statistics
runs = {}
for line in sys.stdin:
    b, status, total, *steps = line.split()
    runs.setdefault(b, []).append((status, float(total), [float(s) for s in steps]))
for b, rs in runs.items():
    steps = [s for _, _, ss in rs for s in ss]
    done = sum(st == "completed" for st, _, _ in rs)
    total = statistics.median(t for _, t, _ in rs)
    print(f"{b:15} runs {len(rs)} ({done} completed)  run p50 (process start to result) {total:8.0f} ms  step p50 {statistics.median(steps):7.1f} ms")
'

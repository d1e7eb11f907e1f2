#!/usr/bin/env bash
# The builds that drive no browser: the scheduler crate, the `oxwright`
# binary without its `browser` feature (submit, scheduler with a broker,
# dashboard, config, sitemap, report) and the scheduler function. Each must
# build clean and link no Chromium driver.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for build in \
    "-p oxwright-scheduler" \
    "-p oxwright --no-default-features" \
    "-p oxwright-lambda --no-default-features --features lambda"; do
    # shellcheck disable=SC2086
    linked=$(cargo tree $build --locked -e normal --prefix none | grep -E '^(chromiumoxide|oxwright-browser|oxwright-worker) ' | sort -u || true)
    if [ -n "$linked" ]; then
        echo "browserless: cargo tree $build links:" >&2
        echo "$linked" >&2
        status=1
    else
        echo "browserless: cargo tree $build: no Chromium driver"
    fi
done
cargo clippy -p oxwright -p oxwright-lambda --no-default-features --features oxwright-lambda/lambda \
    --bins --locked -- -D warnings
exit "$status"

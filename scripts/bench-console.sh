#!/usr/bin/env bash
# The console benchmark (issue 13, "Evidence required"): the same generated history, signed by
# the harness's Group Authority key, measured natively and on the benchmark page in headless
# Chromium (playwright-core + Debian's chromium) with the console's own code (app::bench): Events
# verified and folded per second (and the ratio) — on the page's thread alone and with the Web
# Worker pool (app/src/pool.rs) —, the replay of the whole history to every projection with the
# progress bar, DAG layout + first paint of the Mission's WorkItems, one live
# node update; then the gzip size of the shipped console (scripts/build-web.sh release).
# A benchmark, not a test: it prints figures and asserts nothing about time.
#
# Usage: scripts/bench-console.sh [EVENTS] [WORK_ITEMS]   (default 100000 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
EVENTS=${1:-100000}
WORK_ITEMS=${2:-2000}
TARGET_DIR=${CARGO_TARGET_DIR:-target}
case $TARGET_DIR in /*) ;; *) TARGET_DIR=$ROOT/$TARGET_DIR ;; esac
PAGE=$TARGET_DIR/bench-console
# The native side may build in its own target dir (BENCH_NATIVE_TARGET_DIR), in parallel with wasm.
NATIVE_TARGET=${BENCH_NATIVE_TARGET_DIR:-$TARGET_DIR}

echo "== benchmark page (release, feature bench) =="
FEATURES=bench DIST=$PAGE WASM_OPT_FLAGS=${WASM_OPT_FLAGS:--Oz --strip-debug --strip-producers} \
  bash scripts/build-web.sh release | grep '^\[build-web\] wasm'
mkdir -p "$PAGE/bench"
# The console's stylesheet (served under /style by weave-console): the DAG and the WorkItem
# table are measured styled as in the Mission view.
rm -rf "$PAGE/style" && cp -R style "$PAGE/style"

echo "== native (release) =="
CARGO_TARGET_DIR=$NATIVE_TARGET cargo build -q --release -p app --example bench_console
NATIVE=$("$NATIVE_TARGET/release/examples/bench_console" --events "$EVENTS" --work-items "$WORK_ITEMS" \
  --out "$PAGE/bench/history.jsonl")
echo "$NATIVE"

echo "== wasm32 in headless Chromium (the benchmark page) =="
WASM=$(node end2end/bench-console.mjs "$PAGE")
echo "$WASM"

echo "== ratio (wasm / native), Events verified and folded per second =="
n=$(echo "$NATIVE" | grep -F 'verified+folded' | sed -E 's/.*: ([0-9]+) \/s.*/\1/')
# One row per way the page replays (pool off as before, the one-thread fallback, the Worker pool).
echo "$WASM" | grep -F 'verified+folded' | while IFS= read -r line; do
  w=$(echo "$line" | sed -E 's/.*: ([0-9]+) \/s.*/\1/')
  label=$(echo "$line" | sed -E 's/^BENCH wasm (.*) ?verified\+folded.*/\1/; s/[: ]+$//')
  awk -v n="$n" -v w="$w" -v l="$label" 'BEGIN { if (n > 0) printf "  %s: native %d /s  wasm %d /s  wasm at %.0f%% of native (target: at least 40%%)\n", l, n, w, 100 * w / n }'
done

echo "== shipped console (scripts/build-web.sh release) =="
bash scripts/build-web.sh release | grep '^\[build-web\]'

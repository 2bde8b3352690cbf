#!/usr/bin/env bash
# The protocol-core benchmark, natively and in headless Chromium (wasm32), in one run, with the
# ratio. Both sides run simulation::bench::run_core (same input, same code, release builds).
# A benchmark, not a test: it prints figures; it asserts nothing about time.
#
# Usage: scripts/bench.sh [MS_PER_WORKLOAD]   (default 3000)
set -euo pipefail
cd "$(dirname "$0")/.."
MS=${1:-3000}
export MWP_PROTOCOL_DIR=${MWP_PROTOCOL_DIR:-$(cd ../shared/protocol && pwd)}
bash scripts/setup.sh >/dev/null

echo "== native (release) =="
cargo build -q --release -p server --bin weave-console
NATIVE=$(./target/release/weave-console bench core --ms "$MS")
echo "$NATIVE"

echo "== wasm32 in headless Chromium (release) =="
WASM=$(BENCH_MS=$MS CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  CHROMEDRIVER=/usr/bin/chromedriver WASM_BINDGEN_TEST_TIMEOUT=600 \
  cargo test --release -p simulation --target wasm32-unknown-unknown --test bench_browser -- --nocapture 2>&1)
echo "$WASM" | grep '^BENCH wasm' || { echo "$WASM"; exit 1; }

echo "== ratio (native / wasm) =="
for name in "jcs+verify (six stages, from bytes)" "jcs only" "ed25519 decode R + equation"; do
  n=$(echo "$NATIVE" | grep -F "$name" | awk -F'  +' '{print $3}' | awk '{print $1}')
  w=$(echo "$WASM" | grep -F "BENCH wasm $name" | sed -E 's/.* ([0-9]+) \/s.*/\1/')
  awk -v n="$n" -v w="$w" -v name="$name" 'BEGIN { if (w > 0) printf "  %-40s native %8d /s  wasm %8d /s  ratio %.2fx\n", name, n, w, n / w }'
done

#!/usr/bin/env bash
# Mutation testing (cargo-mutants) of the code that decides what is accepted: crypto/,
# admission/, json/, id.rs, time.rs, encoding.rs and the authority's guards.rs, each mutant
# against the whole wasm-core suite (cargo-nextest; the bounded fuzzers at FUZZ_SECONDS=1).
# Not part of scripts/test.sh: a full run takes hours on 2 cores.
#
# Usage: scripts/mutants.sh [MODULE...] [-- cargo-mutants flags]
#   MODULE: crypto admission json id time encoding guards (default: all, in that order).
# Results go to target/mutants/<module>/mutants.out (caught.txt, missed.txt, …); the last line
# per module is printed as "module: caught C / viable V (missed M, timeouts T, unviable U)".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if ! command -v cargo-mutants >/dev/null; then
  echo "mutants.sh: installing cargo-mutants" >&2
  cargo install --locked cargo-mutants
fi
if ! command -v cargo-nextest >/dev/null; then
  echo "mutants.sh: installing cargo-nextest" >&2
  cargo install --locked cargo-nextest
fi
export MWP_PROTOCOL_DIR=${MWP_PROTOCOL_DIR:-$(cd ../shared/protocol && pwd)}
export JSON_SCHEMA_TEST_SUITE_DIR=${JSON_SCHEMA_TEST_SUITE_DIR:-$ROOT/target/fixtures/json-schema-test-suite}
export FUZZ_SECONDS=${FUZZ_SECONDS:-1}
# Faster builds of each mutant: no debug info.
export CARGO_PROFILE_DEV_DEBUG=0

MODULES=()
EXTRA=()
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; EXTRA=("$@"); break ;;
    *) MODULES+=("$1"); shift ;;
  esac
done
[ ${#MODULES[@]} -gt 0 ] || MODULES=(crypto admission guards encoding id json time)

files_of() {
  case $1 in
    crypto) echo "wasm-core/src/crypto/*.rs" ;;
    admission) echo "wasm-core/src/admission/*.rs" ;;
    json) echo "wasm-core/src/json/*.rs" ;;
    id) echo "wasm-core/src/id.rs" ;;
    time) echo "wasm-core/src/time.rs" ;;
    encoding) echo "wasm-core/src/encoding.rs" ;;
    guards) echo "wasm-core/src/authority/guards.rs" ;;
    *) echo "mutants.sh: unknown module '$1'" >&2; exit 2 ;;
  esac
}

for m in "${MODULES[@]}"; do
  out="target/mutants/$m"
  mkdir -p "$out"
  echo "== $m ($(files_of "$m"))"
  # cargo-mutants exits non-zero when mutants survive; the summary below tells.
  cargo mutants -p wasm-core -f "$(files_of "$m")" --output "$out" --no-shuffle "${EXTRA[@]}" || true
  dir="$out/mutants.out"
  count() { [ -f "$dir/$1" ] && grep -c . "$dir/$1" || echo 0; }
  caught=$(count caught.txt); missed=$(count missed.txt); timeout=$(count timeout.txt); unviable=$(count unviable.txt)
  echo "$m: caught $caught / viable $((caught + missed + timeout)) (missed $missed, timeouts $timeout, unviable $unviable)"
done

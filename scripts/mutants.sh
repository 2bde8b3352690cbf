#!/usr/bin/env bash
# Mutation testing (cargo-mutants) of the code that decides what is accepted: crypto/,
# admission/, json/, id.rs, time.rs, encoding.rs and the authority's guards.rs.
# Two passes per module: first each mutant against the test targets that exercise the module
# (fast), then every mutant that survived against the whole wasm-core and simulation suites
# (`--iterate`), so the result is that of the whole suite. Tests run under cargo-nextest; the
# bounded fuzzers at FUZZ_SECONDS=1. Not part of scripts/test.sh: a full run takes hours on 2 cores.
#
# Usage: scripts/mutants.sh [MODULE...] [-- cargo-mutants flags]
#   MODULE: crypto admission guards encoding id json time (default: all, in that order).
# Results go to target/mutants/<module>/mutants.out (caught.txt, missed.txt, …); the last line
# per module is printed as "module: caught C / viable V (missed M, timeouts T, unviable U)".
# Run it in a checkout you are not editing: with --in-place (as below) the mutants are applied
# to the working tree one at a time (each is reverted before the next).
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

# The core's tests, and the simulation crate's, which drive the authority through the test
# Organization (the authority_*, scenarios and admission targets live there): `-p simulation`
# goes to the test command itself (cargo-mutants 27's `--test-package` did not reach it beside
# `-p wasm-core`: the baseline failed on `no test target named admission`).
TEST_PACKAGES=(-p simulation)

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

# The test targets that exercise each module (the first pass); `--lib` is the unit tests.
tests_of() {
  local common="--lib --test rules --test bundles --test fuzz"
  case $1 in
    crypto) echo "$common --test admission --test signatures --test ed25519_edge --test registry_fixture --test authority" ;;
    admission) echo "$common --test admission --test signatures" ;;
    guards) echo "--lib --test authority --test authority_membership --test authority_mission \
--test authority_work_exec --test authority_work_plan --test authority_properties --test scenarios" ;;
    encoding) echo "$common --test signatures --test formats --test admission" ;;
    id|time) echo "$common --test formats --test admission" ;;
    json) echo "$common --test jcs_differential --test formats --test signatures" ;;
  esac
}

for m in "${MODULES[@]}"; do
  out="target/mutants/$m"
  mkdir -p "$out"
  echo "== $m ($(files_of "$m"))"
  dir="$out/mutants.out"
  count() { if [ -f "$1/$2" ]; then awk 'END { print NR }' "$1/$2"; else echo 0; fi; }
  # cargo-mutants exits non-zero when mutants survive; the summary below tells.
  # shellcheck disable=SC2046
  cargo mutants -p wasm-core -f "$(files_of "$m")" --output "$out" --no-shuffle --in-place \
    "${EXTRA[@]}" -- "${TEST_PACKAGES[@]}" $(tests_of "$m") || true
  # The first pass's outcomes; --iterate below replaces mutants.out with its own.
  rm -rf "$out/first" && cp -r "$dir" "$out/first"
  c1=$(count "$out/first" caught.txt); m1=$(count "$out/first" missed.txt)
  t1=$(count "$out/first" timeout.txt); u1=$(count "$out/first" unviable.txt)
  echo "$m, first pass: caught $c1, missed $m1, timeouts $t1, unviable $u1"
  # The survivors again, against the whole suite.
  if [ $((m1 + t1)) -gt 0 ]; then
    cargo mutants -p wasm-core -f "$(files_of "$m")" --output "$out" --no-shuffle --in-place \
      --iterate "${EXTRA[@]}" -- "${TEST_PACKAGES[@]}" || true
    c2=$(count "$dir" caught.txt); m2=$(count "$dir" missed.txt); t2=$(count "$dir" timeout.txt)
  else
    c2=0; m2=0; t2=0
  fi
  echo "$m: caught $((c1 + c2)) / viable $((c1 + m1 + t1)) (missed $m2, timeouts $t2, unviable $u1)"
done

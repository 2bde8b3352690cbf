#!/usr/bin/env bash
# THE test command. Runs, in order (each prints `== STEP ==` and its wall time):
#   fmt          cargo fmt --all --check
#   clippy       cargo clippy --workspace --all-targets -- -D warnings, and the console's
#                browser-only code: cargo clippy -p app --target wasm32-unknown-unknown --features csr
#                and --features bench (the benchmark page, built by nothing else in CI)
#                (and -p protocol-runner, the Protocol view's module loaded on request)
#   wasm         release build of wasm-core for wasm32-unknown-unknown (+ host-import check of the
#                core's and the simulation's browser-test modules, and of demo-node's Worker module)
#   test         cargo test --workspace (native)
#   conformance  weave-console conformance (official vectors from MWP_PROTOCOL_DIR)
#   scenarios    weave-console scenarios (behavioural suite of the embedded authority)
#   browser      wasm-core and simulation tests in headless Chromium (wasm-bindgen-test-runner +
#                chromedriver)
#   end2end      scripts/build-web.sh release, weave-console serve, end2end/console.mjs, then
#                end2end/agent.mjs (a Node Agent joins an Organization of `org init` with its join
#                file), end2end/decide.mjs (the Approvals view against the same demo), then end2end/proxy.mjs
#                (the console through `serve --upstream` in front of a second demo server);
#                end2end/notify.mjs starts a demo server of its own; then scripts/build-web.sh demo
#                and end2end/static-demo.mjs (dist-demo/ from a plain file server)
#                (playwright-core + Debian chromium + @axe-core/playwright)
# Before the steps it runs scripts/setup.sh (idempotent installer; --skip setup to leave it out).
# Ends with `all: N passed, 0 failed`; stops at the first failing step with a non-zero exit.
#
# Usage: scripts/test.sh [--only STEP[,STEP...]]... [--skip STEP[,STEP...]]...
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ALL_STEPS=(fmt clippy wasm test conformance scenarios browser end2end)
usage() {
  cat <<USAGE
Usage: scripts/test.sh [--only STEP[,STEP...]]... [--skip STEP[,STEP...]]...
Steps, in order: ${ALL_STEPS[*]}
  --only STEP  run only the named steps (repeatable or comma-separated)
  --skip STEP  leave out the named steps; 'setup' leaves out scripts/setup.sh
USAGE
}

ONLY=()
SKIP=()
add_steps() { # add_steps ARRAY_NAME "a,b"
  local -n arr=$1
  local s parts
  IFS=, read -ra parts <<<"$2"
  for s in "${parts[@]}"; do
    [ -z "$s" ] && continue
    if [ "$s" != setup ] && [[ " ${ALL_STEPS[*]} " != *" $s "* ]]; then
      echo "test.sh: unknown step '$s' (steps: ${ALL_STEPS[*]}, setup)" >&2
      exit 2
    fi
    arr+=("$s")
  done
}
while [ $# -gt 0 ]; do
  case $1 in
    --only) [ $# -ge 2 ] || { usage >&2; exit 2; }; add_steps ONLY "$2"; shift 2 ;;
    --only=*) add_steps ONLY "${1#*=}"; shift ;;
    --skip) [ $# -ge 2 ] || { usage >&2; exit 2; }; add_steps SKIP "$2"; shift 2 ;;
    --skip=*) add_steps SKIP "${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "test.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

wanted() { # is step $1 selected?
  local s
  for s in "${SKIP[@]}"; do [ "$s" = "$1" ] && return 1; done
  [ ${#ONLY[@]} -eq 0 ] && return 0
  for s in "${ONLY[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}

now_ms() { date +%s%3N; }
fmt_secs() { printf '%d.%01d s' $(($1 / 1000)) $((($1 % 1000) / 100)); }

# Disk after each step: the target dir's size and what is left on its filesystem (the CI machine's
# disk is finite; stop 16 ran out of it).
disk_report() {
  local used avail
  used=$(du -sh "$TARGET_DIR" 2>/dev/null | cut -f1 || true)
  avail=$(df -h --output=avail "$ROOT" 2>/dev/null | tail -n1 | tr -d ' ' || true)
  echo "-- disk: target ${used:-0} · free ${avail:-?}"
}

PASSED=0
run_step() { # run_step NAME FUNCTION
  local name=$1 fn=$2 start rc
  echo
  echo "== $name =="
  start=$(now_ms)
  # A subshell outside any `||`/`if` context, so that `set -e` stays in force inside the step.
  set +e
  (
    set -e
    "$fn"
  )
  rc=$?
  set -e
  local took=$(($(now_ms) - start))
  if [ "$rc" -ne 0 ]; then
    echo "-- $name: FAILED (exit $rc) after $(fmt_secs "$took")"
    disk_report
    echo
    echo "test.sh: step '$name' failed (exit $rc)" >&2
    echo "all: $PASSED passed, 1 failed"
    exit 1
  fi
  echo "-- $name: ok ($(fmt_secs "$took"))"
  disk_report
  PASSED=$((PASSED + 1))
}

# ---- environment ----
if [ -d "$HOME/.cargo/bin" ] && [[ ":$PATH:" != *":$HOME/.cargo/bin:"* ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if [ -z "${MWP_PROTOCOL_DIR:-}" ]; then
  if ! MWP_PROTOCOL_DIR=$(cd ../shared/protocol 2>/dev/null && pwd); then
    echo "test.sh: protocol bundle not found at $ROOT/../shared/protocol; set MWP_PROTOCOL_DIR" >&2
    exit 1
  fi
fi
export MWP_PROTOCOL_DIR
# The JSON Schema Test Suite's format files (wasm-core/tests/formats.rs), fetched by setup.sh.
JSON_SCHEMA_TEST_SUITE_DIR=${JSON_SCHEMA_TEST_SUITE_DIR:-$ROOT/target/fixtures/json-schema-test-suite}
export JSON_SCHEMA_TEST_SUITE_DIR
# The shared target dir: whatever CARGO_TARGET_DIR says, else ./target (cargo's default).
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -n "${CARGO_TARGET_DIR:-}" ]; then export CARGO_TARGET_DIR; fi
# On CI (a fresh clone, built once) incremental caches only cost disk.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
echo "test.sh: MWP_PROTOCOL_DIR=$MWP_PROTOCOL_DIR"
echo "test.sh: JSON_SCHEMA_TEST_SUITE_DIR=$JSON_SCHEMA_TEST_SUITE_DIR"

# ---- steps ----
step_setup() { bash scripts/setup.sh; }

step_fmt() { cargo fmt --all --check; }

step_clippy() {
  cargo clippy --workspace --all-targets -- -D warnings
  cargo clippy -p app --lib --target wasm32-unknown-unknown --features csr -- -D warnings
  # The benchmark page (scripts/bench-console.sh; never shipped, so nothing else compiles it).
  cargo clippy -p app --lib --target wasm32-unknown-unknown --features bench -- -D warnings
  cargo clippy -p protocol-runner --lib --target wasm32-unknown-unknown -- -D warnings
  # The static demo's Worker module (demo-node/src/worker.rs is wasm32 only).
  cargo clippy -p demo-node --lib --target wasm32-unknown-unknown -- -D warnings
}

BROWSER_ENV=(
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
  CHROMEDRIVER=/usr/bin/chromedriver
  WASM_BINDGEN_TEST_TIMEOUT=300
)
BROWSER_TESTS=(--test rules --test bundles --test formats --test ed25519_edge --test registry_fixture)
# The simulation crate's browser tests (the test Organization, the view models, the demo).
SIM_BROWSER_TESTS=(--test admission --test views_browser --test agents_demo)

# The wasm build of wasm-core, and the sans-IO check: the browser-test module (which links the
# whole core: parser, JCS, models, verification, admission, conformance runners) may import
# nothing from the host but wasm-bindgen's own glue.
step_wasm() {
  cargo build -p wasm-core --target wasm32-unknown-unknown --release
  env "${BROWSER_ENV[@]}" cargo test -p wasm-core --target wasm32-unknown-unknown \
    --features embedded-bundle "${BROWSER_TESTS[@]}" --no-run
  env "${BROWSER_ENV[@]}" cargo test -p simulation --target wasm32-unknown-unknown \
    "${SIM_BROWSER_TESTS[@]}" --no-run
  local f m found
  # The bundles module links the protocol core; views_browser links the console's view models.
  for m in bundles views_browser; do
    found=0
    for f in $(ls -t "$TARGET_DIR"/wasm32-unknown-unknown/debug/deps/"$m"-*.wasm 2>/dev/null | head -n1); do
      found=1
      bash scripts/check-wasm-imports.sh "$f"
    done
    [ "$found" = 1 ] || { echo "wasm: no $m-*.wasm test module was built" >&2; return 1; }
  done
  # The static demo's authority node (issue 30): the Group Authority and the Agents in a Web
  # Worker, sans-IO too (the Worker's script passes the clock and the entropy in).
  cargo build -p demo-node --lib --target wasm32-unknown-unknown --profile wasm-release
  bash scripts/check-wasm-imports.sh "$TARGET_DIR/wasm32-unknown-unknown/wasm-release/demo_node.wasm"
}

step_test() { cargo test --workspace; }

step_conformance() { cargo run -q -p server --bin weave-console -- conformance; }

step_scenarios() { cargo run -q -p server --bin weave-console -- scenarios; }

step_browser() {
  env "${BROWSER_ENV[@]}" cargo test -p wasm-core --target wasm32-unknown-unknown \
    --features embedded-bundle "${BROWSER_TESTS[@]}"
  env "${BROWSER_ENV[@]}" cargo test -p simulation --target wasm32-unknown-unknown \
    "${SIM_BROWSER_TESTS[@]}"
}

SERVER_PID=""
SERVER_LOG=""
TLS_PID=""
TLS_DATA=""
ORG_PID=""
ORG_DATA=""
stop_server() {
  if [ -n "$ORG_PID" ] && kill -0 "$ORG_PID" 2>/dev/null; then
    kill -TERM "$ORG_PID" 2>/dev/null || true
    wait "$ORG_PID" 2>/dev/null || true
  fi
  ORG_PID=""
  if [ -n "$ORG_DATA" ]; then rm -rf "$(dirname "$ORG_DATA")"; ORG_DATA=""; fi
  if [ -n "$TLS_PID" ] && kill -0 "$TLS_PID" 2>/dev/null; then
    kill -TERM "$TLS_PID" 2>/dev/null || true
    wait "$TLS_PID" 2>/dev/null || true
  fi
  TLS_PID=""
  if [ -n "$TLS_DATA" ]; then rm -rf "$TLS_DATA"; TLS_DATA=""; fi
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
  if [ -n "$SERVER_LOG" ]; then rm -f "$SERVER_LOG"; SERVER_LOG=""; fi
}

http_ok() { # http_ok URL: exit 0 if GET URL answers 2xx with body `ok`
  node -e 'fetch(process.argv[1]).then(async r => process.exit(r.ok && (await r.text()).trim() === "ok" ? 0 : 1), () => process.exit(1))' "$1"
}

step_end2end() {
  bash scripts/build-web.sh release
  cargo build -p server --bin weave-console
  local bin="$TARGET_DIR/debug/weave-console"
  # Port 0 (the default) lets the OS pick a free port; the server prints the one it got.
  local port=${E2E_PORT:-0}
  SERVER_LOG=$(mktemp)
  trap stop_server EXIT # the step runs in a subshell: this stops the server however it ends
  local data
  data=$(mktemp -d)
  # The development enrolment token both servers ask of a browser that enrols a key; the
  # browser tests sign in through the join link that carries it (/join#token=…).
  local dev_token
  dev_token=$(node -e 'process.stdout.write(require("crypto").randomBytes(32).toString("base64url"))')
  WEAVE_DEV_TOKEN="$dev_token" "$bin" serve --addr "127.0.0.1:$port" --data "$data" >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  local base="" deadline=$((SECONDS + 60))
  while [ $SECONDS -lt $deadline ]; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "end2end: weave-console exited early:" >&2
      cat "$SERVER_LOG" >&2
      return 1
    fi
    if [ -z "$base" ]; then
      base=$(sed -n 's/^weave-console listening on \(http:\/\/[^ ]*\)$/\1/p' "$SERVER_LOG" | head -n1)
    fi
    if [ -n "$base" ] && http_ok "$base/healthz"; then break; fi
    sleep 0.5
  done
  if [ -z "$base" ] || ! http_ok "$base/healthz"; then
    echo "end2end: weave-console did not answer /healthz within 60 s" >&2
    cat "$SERVER_LOG" >&2
    return 1
  fi
  echo "end2end: weave-console up at $base"
  # A second server as deployed: TLS 1.3 (its development certificate), HTTP/2 by ALPN, wss;
  # no demo (one test signs in there and checks the transport, end2end/console.mjs).
  TLS_DATA=$(mktemp -d)
  : >"$TLS_DATA/log"
  WEAVE_DEV_TOKEN="$dev_token" "$bin" serve --tls --no-demo --addr "127.0.0.1:0" --data "$TLS_DATA" >"$TLS_DATA/log" 2>&1 &
  TLS_PID=$!
  local tls_base
  tls_base=$(wait_listening "$TLS_DATA/log" https "$TLS_PID" "weave-console --tls") || return 1
  echo "end2end: weave-console --tls up at $tls_base"
  # A third server: an Organization of its own (`org init`), not the development one, and a
  # one-time invitation for alice (end2end/console.mjs opens it).
  ORG_DATA=$(mktemp -d)/acme
  "$bin" org init --data "$ORG_DATA" --name "E2E Acme" >/dev/null
  local org_link
  org_link=$("$bin" org invite human alice --data "$ORG_DATA" --expires-in 1h | tail -n1)
  # An Agent whose operator keeps its key: only the public half is given to `org agent add`,
  # which writes the join file end2end/agent.mjs (Node, not Rust) joins with.
  local org_dir agent_seed agent_pub
  org_dir=$(dirname "$ORG_DATA")
  agent_seed=$(node -e 'process.stdout.write(require("crypto").randomBytes(32).toString("base64url"))')
  agent_pub=$(node -e 'const c = require("crypto");
    const der = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), Buffer.from(process.argv[1], "base64url")]);
    process.stdout.write(c.createPublicKey(c.createPrivateKey({ key: der, format: "der", type: "pkcs8" })).export({ format: "jwk" }).x)' "$agent_seed")
  "$bin" org agent template urn:missionweaveprotocol:agent:e2e-builder >"$org_dir/card.json"
  "$bin" org agent add --data "$ORG_DATA" --public-key "$agent_pub" --card "$org_dir/card.json" \
    --out "$org_dir/agent.json" >/dev/null
  # The demo's simulated Agents in this Organization (`org demo`): alice creates their Missions.
  "$bin" org demo --data "$ORG_DATA" --owner alice >/dev/null
  : >"$ORG_DATA/log" # made before the server starts: the loop below reads it at once
  "$bin" serve --addr "127.0.0.1:0" --data "$ORG_DATA" >"$ORG_DATA/log" 2>&1 &
  ORG_PID=$!
  local org_base
  org_base=$(wait_listening "$ORG_DATA/log" http "$ORG_PID" "weave-console serving an Organization of its own") || return 1
  echo "end2end: weave-console serving an Organization of its own up at $org_base"
  local rc=0
  BASE_URL="$base/" TLS_BASE_URL="$tls_base/" DEV_TOKEN="$dev_token" \
    ORG_BASE_URL="$org_base/" ORG_JOIN_LINK="$org_link" ORG_DATA="$ORG_DATA" WEAVE_BIN="$bin" \
    node end2end/console.mjs || rc=$?
  # The write side against the same demo (the Approvals view; issue 13, view 4).
  # A non-Rust Agent joins the Organization of its own with the join file and its own key.
  if [ "$rc" -eq 0 ]; then
    ORG_BASE_URL="$org_base/" AGENT_FILE="$org_dir/agent.json" AGENT_SEED="$agent_seed" \
      node --experimental-websocket end2end/agent.mjs || rc=$?
  fi
  if [ "$rc" -eq 0 ]; then BASE_URL="$base/" DEV_TOKEN="$dev_token" node end2end/decide.mjs || rc=$?; fi
  # The title count and notifications: a demo server of its own, whose gate opens after the
  # console is live (docs/notifications.md).
  if [ "$rc" -eq 0 ]; then WEAVE_BIN="$bin" node end2end/notify.mjs || rc=$?; fi
  stop_server
  # The console through the proxy: a demo server upstream, `serve --upstream …
  # --registry-from-upstream` in front of it, and a key brought from elsewhere (issue 26).
  if [ "$rc" -eq 0 ]; then proxy_walk "$bin" "$dev_token" || rc=$?; fi
  stop_server
  # The static demo (issue 30): dist-demo/ from a plain file server, no weave-console.
  if [ "$rc" -eq 0 ]; then bash scripts/build-web.sh demo || rc=$?; fi
  if [ "$rc" -eq 0 ]; then node end2end/static-demo.mjs || rc=$?; fi
  return "$rc"
}

# wait_listening LOG SCHEME PID WHAT: the base URL a server printed; after 60 s without it (or
# once the server exited), says that WHAT did not start, shows its log, and fails.
wait_listening() {
  local log=$1 scheme=$2 pid=$3 what=$4 got="" deadline=$((SECONDS + 60))
  while [ -z "$got" ] && [ $SECONDS -lt $deadline ] && kill -0 "$pid" 2>/dev/null; do
    got=$(sed -n "s/^weave-console listening on \($scheme:\/\/[^ ]*\)\$/\1/p" "$log" | head -n1)
    [ -n "$got" ] || sleep 0.5
  done
  if [ -z "$got" ]; then
    echo "end2end: $what did not start:" >&2
    cat "$log" >&2
    return 1
  fi
  echo "$got"
}

proxy_walk() {
  local bin=$1 dev_token=$2
  TLS_DATA=$(mktemp -d) # removed by stop_server
  local up_data="$TLS_DATA/upstream" proxy_data="$TLS_DATA/proxy"
  : >"$TLS_DATA/up.log"
  : >"$TLS_DATA/proxy.log"
  WEAVE_DEV_TOKEN="$dev_token" "$bin" serve --addr "127.0.0.1:0" --data "$up_data" >"$TLS_DATA/up.log" 2>&1 &
  SERVER_PID=$!
  local up_base
  up_base=$(wait_listening "$TLS_DATA/up.log" http "$SERVER_PID" "the upstream") || return 1
  local up_ws="ws://${up_base#http://}/ws"
  "$bin" serve --addr "127.0.0.1:0" --data "$proxy_data" --upstream "$up_ws" --registry-from-upstream \
    >"$TLS_DATA/proxy.log" 2>&1 &
  TLS_PID=$!
  local proxy_base
  proxy_base=$(wait_listening "$TLS_DATA/proxy.log" http "$TLS_PID" "the proxy") || return 1
  echo "end2end: proxy at $proxy_base in front of $up_base"
  PROXY_URL="$proxy_base/" UPSTREAM_DATA="$up_data" node end2end/proxy.mjs
}

# ---- run ----
if [[ " ${SKIP[*]} " != *" setup "* ]]; then
  echo "== setup =="
  start=$(now_ms)
  if ! step_setup; then
    echo "test.sh: scripts/setup.sh failed" >&2
    echo "all: 0 passed, 1 failed"
    exit 1
  fi
  echo "-- setup: ok ($(fmt_secs $(($(now_ms) - start))))"
fi

for step in "${ALL_STEPS[@]}"; do
  if wanted "$step"; then run_step "$step" "step_$step"; fi
done

echo
if [ "$PASSED" -eq 0 ]; then
  echo "test.sh: no step selected" >&2
  exit 2
fi
echo "all: $PASSED passed, 0 failed"

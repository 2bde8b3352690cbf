#!/usr/bin/env bash
# THE product command: installs what is missing (scripts/setup.sh, idempotent), builds the
# console (scripts/build-web.sh release, into dist/) and the release server, and runs
# `weave-console serve`. Arguments are passed through, e.g.
#   scripts/run.sh --addr 0.0.0.0:8080
# A first argument that is another subcommand (conformance, scenarios, bench, dev, help) runs that instead.
#
#   scripts/run.sh --nodes 3   # a cluster on this machine (docs/cluster.md): a throwaway PostgreSQL
#                              # (scripts/pg-local.sh, kept in data-cluster/pg) and three nodes on
#                              # ports 8080-8082 sharing data-cluster/, the demo on the first;
#                              # one console URL per node. Ctrl-C stops them all.
set -euo pipefail
ORIG=$PWD
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -d "$HOME/.cargo/bin" ] && [[ ":$PATH:" != *":$HOME/.cargo/bin:"* ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if [ -z "${MWP_PROTOCOL_DIR:-}" ] && [ -d ../shared/protocol ]; then
  MWP_PROTOCOL_DIR=$(cd ../shared/protocol && pwd)
  export MWP_PROTOCOL_DIR
fi
bash scripts/setup.sh
bash scripts/build-web.sh release
cargo build --release -p server --bin weave-console
TARGET_DIR=${CARGO_TARGET_DIR:-target}
case $TARGET_DIR in /*) ;; *) TARGET_DIR=$ROOT/$TARGET_DIR ;; esac
BIN=$TARGET_DIR/release/weave-console
cd "$ORIG"
if [ "${1:-}" = "--nodes" ]; then
  NODES=${2:?--nodes N}
  shift 2
  case $NODES in ''|*[!0-9]*) echo "run.sh: --nodes takes a number" >&2; exit 2 ;; esac
  DATA=${WEAVE_DATA:-data-cluster}
  mkdir -p "$DATA"
  DATA=$(cd "$DATA" && pwd)
  PGPORT=${PGPORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
  URL=$(bash "$ROOT/scripts/pg-local.sh" start "$DATA/pg" "$PGPORT")
  TOKEN=${WEAVE_DEV_TOKEN:-$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')}
  BASE=${PORT_BASE:-8080}
  PIDS=()
  stop_all() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    bash "$ROOT/scripts/pg-local.sh" halt "$DATA/pg"
  }
  trap stop_all EXIT INT TERM
  echo "run.sh: PostgreSQL at $URL (data in $DATA/pg)"
  for i in $(seq 1 "$NODES"); do
    PORT=$((BASE + i - 1))
    DEMO=()
    [ "$i" -gt 1 ] && DEMO=(--no-demo)
    WEAVE_DEV_TOKEN=$TOKEN "$BIN" serve --addr "127.0.0.1:$PORT" --data "$DATA" --store "$URL" \
      --node "node-$i" "${DEMO[@]}" "$@" > >(sed -u "s/^/[node-$i] /") 2>&1 &
    PIDS+=($!)
    # The first node creates the Organization the others share: it must be up first.
    if [ "$i" = 1 ]; then
      for _ in $(seq 1 600); do
        curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
        sleep 0.2
      done
    fi
  done
  sleep 1
  echo "run.sh: $NODES nodes; open the console on any of them (the demo runs on node-1):"
  for i in $(seq 1 "$NODES"); do
    echo "  node-$i: http://127.0.0.1:$((BASE + i - 1))/join#token=$TOKEN&name=mission-owner"
  done
  wait
  exit 0
fi
case ${1:-} in
  serve|conformance|scenarios|bench|dev|help|-h|--help|-V|--version) exec "$BIN" "$@" ;;
  *) exec "$BIN" serve "$@" ;;
esac

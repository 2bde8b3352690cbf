#!/usr/bin/env bash
# THE product command: installs what is missing (scripts/setup.sh, idempotent), builds the
# console (scripts/build-web.sh release, into dist/) and the release server, and runs
# `weave-console serve`. Arguments are passed through, e.g.
#   scripts/run.sh --addr 0.0.0.0:8080
# A first argument that is another subcommand (conformance, scenarios, bench, dev, help) runs that instead.
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
case ${1:-} in
  serve|conformance|scenarios|bench|dev|help|-h|--help|-V|--version) exec "$BIN" "$@" ;;
  *) exec "$BIN" serve "$@" ;;
esac

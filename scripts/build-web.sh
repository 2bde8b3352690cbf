#!/usr/bin/env bash
# Builds the console (issue 13) into dist/, which `weave-console serve` serves:
#   1. the Leptos app for wasm32 with cargo (`--features csr`; profile wasm-release, or dev),
#      linked with its relocations (`--emit-relocs`, app/build.rs);
#   2. wasm-split-cli (crate wasm_split_cli_support, installed by scripts/setup.sh): every view
#      but the board is a split point (app/src/routes/lazy.rs); their code goes out of the main
#      module into split_<view>.wasm, code shared by several views into chunk_<n>.wasm, and
#      __wasm_split.js holds the loaders (each fetches its chunks on first use and instantiates
#      them on the main module's memory and table);
#   3. wasm-bindgen CLI (the version pinned in Cargo.lock, installed by scripts/setup.sh) on the
#      main module, with --keep-lld-exports --no-demangle (the chunks import those exports);
#   4. release only: wasm-opt -Oz from npm `binaryen` (end2end/node_modules; never Debian's,
#      whose wasm-opt 108 breaks wasm-bindgen 0.2.130 output) on the main module and each chunk;
#   5. dist/pkg/<hash>/{app.js, app_bg.wasm, __wasm_split.js, split_*.wasm, chunk_*.wasm, boot.js,
#      worker.js} (content-hashed, served immutable) and dist/index.html pointing at them; beside
#      them the Protocol view's bundle runner (crate protocol-runner, its own module: runner.js,
#      runner_bg.wasm, runner-worker.js), which the console loads only when the person asks to
#      run the official bundles or to verify an audit bundle;
#   6. release only: each of those also as NAME.gz, compressed once with zopfli (Debian's `zopfli`,
#      installed by scripts/setup.sh; gzip -9 if it is missing), which the server sends as is to
#      every browser that accepts gzip; prints the raw, gzip -9 and sent sizes: the first view (a
#      visit to the board: html, app.js, main wasm, __wasm_split.js, boot.js, worker.js, css; the
#      600 KB bar), each chunk, all chunks, what opening each other view adds (its split_ file
#      and the shared chunks its loader waits for), the runner loaded on request, and the sums.
# No inline script anywhere: boot.js and worker.js are files, so the CSP needs no 'unsafe-inline'.
#
# `demo` (issue 30, docs/static-demo.md) writes dist-demo/ instead, a folder any static file server
# serves: the in-memory authority node (crate demo-node: the Group Authority and the §22 demo's
# Agents) as pkg/<hash>/demo_bg.wasm + demo.js, run by pkg/<hash>/demo-worker.js in a module Web
# Worker, and the page that starts it (index.html, demo-page.js, demo.css from demo-node/web/;
# the CSP in a meta tag, paths relative), and the console itself: built as `release` builds it (into
# a scratch folder), its pkg/<hash>/ and style/console.css copied beside the node's, its boot.js
# loaded after demo-page.js, which tells it that its authority runs in the page (window.mwpDemo).
#
# Usage: scripts/build-web.sh [release|debug|demo]   (default release)
# Environment: FEATURES (default csr; scripts/bench-console.sh passes bench), DIST (default dist),
# WASM_OPT_FLAGS (default -Oz --converge --strip-debug --strip-producers).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:-release}
if [ -d "$HOME/.cargo/bin" ] && [[ ":$PATH:" != *":$HOME/.cargo/bin:"* ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
TARGET_DIR=${CARGO_TARGET_DIR:-target}
case $TARGET_DIR in /*) ;; *) TARGET_DIR=$ROOT/$TARGET_DIR ;; esac
case $MODE in
  release) PROFILE=wasm-release; OUTDIR=wasm-release ;;
  debug) PROFILE=dev; OUTDIR=debug ;;
  demo) PROFILE=wasm-release; OUTDIR=wasm-release ;;
  *) echo "usage: $0 [release|debug|demo]" >&2; exit 2 ;;
esac
log() { printf '[build-web] %s\n' "$*"; }

# The chunks split loader $2 of the __wasm_split.js $1 waits for, one number a line (`3` for
# chunk_3.wasm): the loader's statement ends with its list, `…, [__chunk_3, __chunk_5]));`. Read
# once here for the size report ("opening … adds") and for the service worker's first list.
loader_chunks() {
  awk -v v="__wasm_split_load_$2" '$1 == "export" && $3 == v { f = 1 } f && /\]\)\);$/ { print; exit }' "$1" |
    sed 's/.*\[\(.*\)\]));$/\1/' | tr -d ' ' | tr ',' '\n' | sed -n 's/^__chunk_//p'
}

# The split loaders whose chunks the demo page opens at once (their names in __wasm_split.js,
# `visitor` for split_visitor.wasm; `split_visitor` is read the same): cached at install with the
# console's first view. The demo opens the visitor's read-only session at once
# (app/src/components/visitor.rs), so its chunks are part of the demo's first view.
DEMO_FIRST_SPLITS=${DEMO_FIRST_SPLITS:-visitor}

# Offline after the first load (docs/static-demo.md): DIR/sw.js from demo-node/web/sw.js with two
# lists of DIR's files (last, so whatever the folder holds is listed; not NAME.gz, which a plain
# file server does not negotiate) and a version that hashes their names and contents: a new
# build is a new sw.js and a new cache, which replaces the old one once no page of the old build
# is open (sw.js, prune).
#   FIRST, cached at install: what the first view loads (the page, demo.css, style/console.css,
#     the node's pkg/DEMO/ files, the console's app.js, app_bg.wasm, __wasm_split.js, boot.js,
#     worker.js) and the chunks of the loaders in DEMO_FIRST_SPLITS;
#   LATER, every other file of DIR (the other views' chunks, the bundle runner): cached on first
#     use only.
# Usage: offline_sw DIR pkg/DEMO pkg/CONSOLE
offline_sw() {
  local dir=$1 demo=$2 console=$3 files first later version s v n f
  files=$(cd "$dir" && find . -type f ! -name sw.js ! -name '*.gz' | sed 's|^\./||' | LC_ALL=C sort)
  first=$(
    printf '%s\n' index.html demo.css style/console.css
    (cd "$dir" && find "$demo" -type f ! -name '*.gz')
    for f in app.js app_bg.wasm __wasm_split.js boot.js worker.js; do printf '%s\n' "$console/$f"; done
    for s in $DEMO_FIRST_SPLITS; do
      v=${s#split_}
      v=${v%.wasm}
      printf '%s\n' "$console/split_$v.wasm"
      for n in $(loader_chunks "$dir/$console/__wasm_split.js" "$v"); do printf '%s\n' "$console/chunk_$n.wasm"; done
    done
  )
  first=$(printf '%s\n' "$first" | LC_ALL=C sort -u)
  for f in $first; do
    [ -f "$dir/$f" ] || {
      echo "build-web: $f (the service worker's first list) is not in $dir" >&2
      exit 1
    }
  done
  later=$(LC_ALL=C comm -23 <(printf '%s\n' "$files") <(printf '%s\n' "$first"))
  # $files is split on purpose: the folder's names have no spaces.
  # shellcheck disable=SC2086
  # sw.js's own code is hashed too: a new service worker is a new cache.
  version=$( (sha256sum <demo-node/web/sw.js && cd "$dir" && for f in $files; do printf '%s ' "$f"; sha256sum <"$f"; done) | sha256sum | cut -c1-16)
  quoted() { [ -n "$1" ] && printf '%s\n' "$1" | sed 's/.*/"&"/' | paste -sd, -; }
  sed -e "s|__OFFLINE_VERSION__|$version|" \
    -e "s|/\* __OFFLINE_FIRST__ \*/|$(quoted "$first")|" \
    -e "s|/\* __OFFLINE_LATER__ \*/|$(quoted "$later")|" demo-node/web/sw.js >"$dir/sw.js"
  OFFLINE_FIRST=$(printf '%s\n' "$first" | wc -l | tr -d ' ')
  OFFLINE_LATER=$(printf '%s\n' "$later" | grep -c . || true)
  # shellcheck disable=SC2086
  OFFLINE_BYTES=$(cd "$dir" && cat $first | wc -c | tr -d ' ')
  # shellcheck disable=SC2086
  OFFLINE_GZIP=$(cd "$dir" && for f in $first; do gzip -9 -c "$f" | wc -c; done | awk '{ t += $1 } END { print t }')
  OFFLINE_VERSION=$version
}

if [ "$MODE" = demo ]; then
  DIST=${DIST:-dist-demo}
  # The console first, exactly as `release` builds it (its sizes are printed there).
  CONSOLE=$(mktemp -d "$ROOT/.console.XXXXXX")
  trap 'rm -rf "$CONSOLE"' EXIT
  DIST="$CONSOLE/dist" "$0" release
  CHASH=$(basename "$(ls -d "$CONSOLE/dist/pkg/"*/ | head -n 1)")
  START=$(date +%s)
  cargo build -p demo-node --lib --target wasm32-unknown-unknown --profile "$PROFILE"
  log "cargo build $(($(date +%s) - START)) s"
  TMP=$(mktemp -d "$ROOT/.dist.XXXXXX")
  trap 'rm -rf "$TMP" "$CONSOLE"' EXIT
  wasm-bindgen --target web --no-typescript --out-dir "$TMP/pkg" --out-name demo \
    "$TARGET_DIR/wasm32-unknown-unknown/$OUTDIR/demo_node.wasm"
  WASM_OPT=${WASM_OPT:-$ROOT/end2end/node_modules/.bin/wasm-opt}
  if [ ! -x "$WASM_OPT" ]; then
    echo "build-web: $WASM_OPT not found; run scripts/setup.sh (npm binaryen)" >&2
    exit 1
  fi
  # shellcheck disable=SC2086
  "$WASM_OPT" ${WASM_OPT_FLAGS:--Oz --converge --strip-debug --strip-producers} "$TMP/pkg/demo_bg.wasm" -o "$TMP/pkg/demo_bg.wasm"
  cp demo-node/web/demo-worker.js demo-node/web/demo-page.js demo-node/web/offline.js "$TMP/pkg/"
  PKGFILES=(demo.js demo_bg.wasm demo-worker.js demo-page.js offline.js)
  HASH=$(cd "$TMP/pkg" && cat "${PKGFILES[@]}" | sha256sum | cut -c1-16)
  mkdir -p "$TMP/pkg/$HASH"
  (cd "$TMP/pkg" && mv "${PKGFILES[@]}" "$HASH/")
  cp demo-node/web/demo.css "$TMP/"
  mv "$CONSOLE/dist/pkg/$CHASH" "$TMP/pkg/"
  mkdir -p "$TMP/style"
  cp style/console.css "$TMP/style/"
  sed "s|__PKG__|pkg/$HASH|g; s|__CONSOLE__|pkg/$CHASH|g" demo-node/web/index.html >"$TMP/index.html"
  # Last before the folder is moved in place: every file of it is listed, the console's too.
  offline_sw "$TMP" "pkg/$HASH" "pkg/$CHASH"
  rm -rf "$DIST" "$CONSOLE"
  mv "$TMP" "$DIST"
  trap - EXIT
  size() { wc -c <"$1" | tr -d ' '; }
  gz() { gzip -9 -c "$1" | wc -c | tr -d ' '; }
  TOTAL=0
  for f in "$DIST/index.html" "$DIST/demo.css" "$DIST/pkg/$HASH/"*; do
    TOTAL=$((TOTAL + $(gz "$f")))
    log "$(basename "$f"): $(size "$f") B raw, gzip -9 $(gz "$f") B"
  done
  log "mode demo, $DIST/pkg/$HASH; the page and the authority's Worker, gzip -9: $TOTAL B"
  log "sw.js $(size "$DIST/sw.js") B, version $OFFLINE_VERSION: caches at install $OFFLINE_FIRST files, $OFFLINE_BYTES B raw, gzip -9 $OFFLINE_GZIP B; on first use $OFFLINE_LATER files"
  # The console's first view in the demo (as `release` counts it, without its index.html: the
  # page above is the demo's), gzip -9.
  C=$DIST/pkg/$CHASH
  CTOTAL=0
  for f in "$C/app.js" "$C/app_bg.wasm" "$C/__wasm_split.js" "$C/boot.js" "$C/worker.js" "$DIST/style/console.css"; do
    CTOTAL=$((CTOTAL + $(gz "$f")))
  done
  log "console first view ($DIST/pkg/$CHASH: app.js, app_bg.wasm, __wasm_split.js, boot.js, worker.js, console.css), gzip -9: $CTOTAL B"
  log "the demo's first view (page + authority's Worker + console first view), gzip -9: $((TOTAL + CTOTAL)) B"
  exit 0
fi

FEATURES=${FEATURES:-csr}
DIST=${DIST:-dist}
# Release on a pinned nightly (WEB_NIGHTLY, empty = stable): the standard library rebuilt with the
# module's own flags (WEB_RUSTFLAGS), --cfg erase_components kept (.cargo/config.toml's note).
CARGO=(cargo)
if [ "$MODE" = release ] && [ -n "${WEB_NIGHTLY:-}" ]; then
  CARGO=(cargo "+$WEB_NIGHTLY")
  # This variable is merged with .cargo/config.toml's `--cfg erase_components`.
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="${WEB_RUSTFLAGS:-}"
  CARGO_ARGS=(-Zbuild-std=std,panic_abort)
else
  CARGO_ARGS=()
fi
START=$(date +%s)
"${CARGO[@]}" build "${CARGO_ARGS[@]}" -p app --lib --target wasm32-unknown-unknown --features "$FEATURES" --profile "$PROFILE"
"${CARGO[@]}" build "${CARGO_ARGS[@]}" -p protocol-runner --lib --target wasm32-unknown-unknown --profile "$PROFILE"
log "cargo build $(($(date +%s) - START)) s"
WASM=$TARGET_DIR/wasm32-unknown-unknown/$OUTDIR/app.wasm
RUNNER_WASM=$TARGET_DIR/wasm32-unknown-unknown/$OUTDIR/protocol_runner.wasm

TMP=$(mktemp -d "$ROOT/.dist.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# The lazily loaded views (app/src/routes/lazy.rs): wasm-split-cli (crate wasm_split_cli_support,
# installed by scripts/setup.sh) cuts each split point's code out of the module cargo linked (with
# its relocations, app/build.rs) into split_<view>.wasm, code shared by several views into
# chunk_<n>.wasm, and writes __wasm_split.js, the loaders the main module imports; the chunks
# import the main module's memory, table and functions. Then wasm-bindgen on the main module,
# keeping the exports the chunks import (as cargo-leptos does for Leptos's `#[lazy]`).
command -v wasm-split-cli >/dev/null || {
  echo "build-web: wasm-split-cli not found; run scripts/setup.sh" >&2
  exit 1
}
wasm-split-cli --target web --out-name app "$WASM" "$TMP/split"
wasm-bindgen --target web --no-typescript --keep-lld-exports --no-demangle --out-dir "$TMP/pkg" --out-name app "$TMP/split/app.wasm"
rm "$TMP/split/app.wasm"
mv "$TMP/split/"* "$TMP/pkg/"
rmdir "$TMP/split"
CHUNKS=()
for f in "$TMP"/pkg/split_*.wasm "$TMP"/pkg/chunk_*.wasm; do
  [ -f "$f" ] && CHUNKS+=("$(basename "$f")")
done
wasm-bindgen --target web --no-typescript --out-dir "$TMP/pkg" --out-name runner "$RUNNER_WASM"
if [ "$MODE" = release ]; then
  WASM_OPT=${WASM_OPT:-$ROOT/end2end/node_modules/.bin/wasm-opt}
  if [ ! -x "$WASM_OPT" ]; then
    echo "build-web: $WASM_OPT not found; run scripts/setup.sh (npm binaryen)" >&2
    exit 1
  fi
  # One wasm-opt per file, as many at once as the machine has cores (the largest first, so the
  # main module does not start last); xargs fails if any of them does.
  START=$(date +%s)
  export WASM_OPT WASM_OPT_FLAGS
  (cd "$TMP/pkg" && ls -S app_bg.wasm runner_bg.wasm "${CHUNKS[@]}") |
    xargs -P "$(nproc)" -I{} sh -c '"$WASM_OPT" ${WASM_OPT_FLAGS:--Oz --converge --strip-debug --strip-producers} "$1" -o "$1"' _ "$TMP/pkg/{}"
  log "wasm-opt $(($(date +%s) - START)) s on $(nproc) cores ($((${#CHUNKS[@]} + 2)) files)"
fi
PKGFILES=(app.js app_bg.wasm __wasm_split.js "${CHUNKS[@]}" runner.js runner_bg.wasm)
HASH=$(cd "$TMP/pkg" && cat "${PKGFILES[@]}" | sha256sum | cut -c1-16)
mkdir -p "$TMP/pkg/$HASH"
(cd "$TMP/pkg" && mv "${PKGFILES[@]}" "$HASH/")
printf "import init from './app.js';\ninit();\n" >"$TMP/pkg/$HASH/boot.js"
# The first replay's Web Workers (app/src/pool.rs): module workers that load the same app.js and
# app_bg.wasm and answer each message with worker_message (a failure is answered too, so the page
# never waits on a worker that threw).
cat >"$TMP/pkg/$HASH/worker.js" <<'JS'
import init, { worker_message } from './app.js';
const ready = init();
self.onmessage = (e) => {
  ready.then(() => worker_message(e.data)).then(
    (reply) => self.postMessage(reply),
    (err) => self.postMessage({ error: String(err) }));
};
JS
# The Protocol view's bundle runner (app/src/routes/protocol.rs, crate protocol-runner): a module
# worker started only when the person asks to run the bundles or to verify an audit bundle.
# `{ready}` once its module is compiled; then, to framed bundle files (a Uint8Array), `{report}`
# (JSON text); to `{audit: Uint8Array}` (components/audit_verify.rs), `{progress: [done, total]}`
# as it verifies, then `{report}`; `{error}` for any of them.
cat >"$TMP/pkg/$HASH/runner-worker.js" <<'JS'
import init, { run_bundles, verify_audit } from './runner.js';
const ready = init();
ready.then(() => self.postMessage({ ready: true }), (err) => self.postMessage({ error: String(err) }));
const progress = (done, total) => self.postMessage({ progress: [done, total] });
self.onmessage = (e) => {
  const m = e.data;
  ready.then(() => (m instanceof Uint8Array ? run_bundles(m) : verify_audit(m.audit, progress))).then(
    (report) => self.postMessage({ report }),
    (err) => self.postMessage({ error: String(err) }));
};
JS
for f in public/*; do
  [ "$(basename "$f")" = index.html ] && continue
  cp -R "$f" "$TMP/"
done
sed "s|__PKG__|/pkg/$HASH|g" public/index.html >"$TMP/index.html"
rm -rf "$DIST"
mkdir -p "$(dirname "$DIST")"
mv "$TMP" "$DIST"
trap - EXIT

size() { wc -c <"$1" | tr -d ' '; }
gz() { gzip -9 -c "$1" | wc -c | tr -d ' '; }
W=$DIST/pkg/$HASH/app_bg.wasm
J=$DIST/pkg/$HASH/app.js
B=$DIST/pkg/$HASH/boot.js
K=$DIST/pkg/$HASH/worker.js
C=style/console.css
RW=$DIST/pkg/$HASH/runner_bg.wasm
RJ=$DIST/pkg/$HASH/runner.js
RK=$DIST/pkg/$HASH/runner-worker.js
S=$DIST/pkg/$HASH/__wasm_split.js
SHIPPED=("$W" "$J" "$S" "$B" "$K" "$DIST/index.html")
CHUNKF=()
for c in "${CHUNKS[@]}"; do CHUNKF+=("$DIST/pkg/$HASH/$c"); done
RUNNER=("$RW" "$RJ" "$RK")
if [ "$MODE" = release ]; then
  # Compressed once here instead of per request: zopfli's deflate is 4–5 % smaller than gzip -9
  # and any gzip decoder reads it. The server sends NAME.gz as is (server/src/console.rs).
  START=$(date +%s)
  if command -v zopfli >/dev/null; then
    zopfli "${SHIPPED[@]}" "${CHUNKF[@]}" "${RUNNER[@]}"
    log "zopfli $(($(date +%s) - START)) s"
  else
    log "zopfli not found (scripts/setup.sh installs it): gzip -9 instead"
    for f in "${SHIPPED[@]}" "${CHUNKF[@]}" "${RUNNER[@]}"; do gzip -9 -n -k -f "$f"; done
  fi
fi
# What a browser receives: NAME.gz where it was built, else the server's on-the-fly gzip
# (tower-http's default level, 6) — the stylesheet, and every file of a debug build.
sent() { if [ -f "$1.gz" ]; then size "$1.gz"; else gzip -6 -c "$1" | wc -c | tr -d ' '; fi; }
TOTAL=0
for f in "${SHIPPED[@]}" "$C"; do TOTAL=$((TOTAL + $(sent "$f"))); done
RTOTAL=0
for f in "${RUNNER[@]}"; do RTOTAL=$((RTOTAL + $(sent "$f"))); done
log "mode $MODE, pkg/$HASH"
log "wasm $(size "$W") B (gzip -9 $(gz "$W") B, sent $(sent "$W") B); js $(size "$J") B (gzip -9 $(gz "$J") B, sent $(sent "$J") B)"
log "first view (the board: html + app.js + main wasm + __wasm_split.js + boot + worker + css) as sent with gzip: $TOTAL B, all three locales included (the 600 KB bar)"
CTOTAL=0
for f in "${CHUNKF[@]}"; do
  CTOTAL=$((CTOTAL + $(sent "$f")))
  log "chunk $(basename "$f"): $(size "$f") B raw, sent $(sent "$f") B"
done
log "all ${#CHUNKF[@]} view chunks as sent with gzip: $CTOTAL B; first view + every chunk: $((TOTAL + CTOTAL)) B"
# What opening each lazily loaded view adds: its split_<view>.wasm and the shared chunk_<n>.wasm
# its loader in __wasm_split.js waits for (each file once per visit).
for f in "${CHUNKF[@]}"; do
  case $(basename "$f") in split_*) ;; *) continue ;; esac
  v=$(basename "$f" .wasm)
  v=${v#split_}
  add=$(sent "$f")
  for n in $(loader_chunks "$S" "$v"); do
    [ -f "$DIST/pkg/$HASH/chunk_$n.wasm" ] && add=$((add + $(sent "$DIST/pkg/$HASH/chunk_$n.wasm")))
  done
  log "opening $v adds $add B as sent"
done
log "runner on request: wasm $(size "$RW") B (gzip -9 $(gz "$RW") B, sent $(sent "$RW") B); js $(size "$RJ") B (sent $(sent "$RJ") B); runner-worker.js sent $(sent "$RK") B"
log "runner loaded on request (runner wasm + js + worker) as sent with gzip: $RTOTAL B"
log "console (first view + every chunk) + runner as sent with gzip: $((TOTAL + CTOTAL + RTOTAL)) B"

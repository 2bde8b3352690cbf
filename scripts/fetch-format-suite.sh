#!/usr/bin/env bash
# Fetches the JSON Schema Test Suite's Draft 2020-12 `optional/format` files for
# wasm-core/tests/formats.rs (issue 11). The suite may not be committed here, so it comes from a
# registry package that carries it: the PyPI sdist of jsonschema 4.26.0, checked by sha256.
# Idempotent: does nothing when the extracted files match the pinned sdist.
#
# Usage: scripts/fetch-format-suite.sh [DEST]
#   DEST defaults to $JSON_SCHEMA_TEST_SUITE_DIR, else target/fixtures/json-schema-test-suite;
#   the files land in DEST/draft2020-12/optional/format/. The sdist is cached beside DEST.
set -euo pipefail
cd "$(dirname "$0")/.."

PKG=jsonschema
VERSION=4.26.0
SHA256=0c26707e2efad8aa1bfc5b7ce170f3fccc2e4918ff85989ba9ffa9facb2be326
SDIST=$PKG-$VERSION.tar.gz
MEMBER=$PKG-$VERSION/json/tests/draft2020-12/optional/format

DEST=${1:-${JSON_SCHEMA_TEST_SUITE_DIR:-target/fixtures/json-schema-test-suite}}
CACHE=$(dirname "$DEST")
STAMP=$DEST/.source
log() { printf '[fetch-format-suite] %s\n' "$*"; }

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$SDIST $SHA256" ] \
  && [ -f "$DEST/draft2020-12/optional/format/date-time.json" ]; then
  exit 0
fi
if [ -e "$DEST" ] && [ ! -f "$STAMP" ]; then
  # Not made by this script (e.g. a checkout of the suite named by JSON_SCHEMA_TEST_SUITE_DIR):
  # use it as it is, never overwrite it.
  if [ -f "$DEST/draft2020-12/optional/format/date-time.json" ]; then
    log "using the suite already in $DEST"
    exit 0
  fi
  echo "fetch-format-suite: $DEST exists but has no draft2020-12/optional/format/" >&2
  exit 1
fi

mkdir -p "$CACHE"
sha_ok() { [ -f "$CACHE/$SDIST" ] && echo "$SHA256  $CACHE/$SDIST" | sha256sum -c --status; }
if ! sha_ok; then
  rm -f "$CACHE/$SDIST"
  PIP=()
  if python3 -m pip --version >/dev/null 2>&1; then
    PIP=(python3 -m pip)
  elif command -v pip3 >/dev/null; then
    PIP=(pip3)
  else
    echo "fetch-format-suite: pip is needed (apt-get install python3-pip)" >&2
    exit 1
  fi
  log "downloading the $PKG $VERSION sdist from PyPI (carries the JSON Schema Test Suite)"
  "${PIP[@]}" download "$PKG==$VERSION" --no-binary :all: --no-deps --dest "$CACHE" \
    --disable-pip-version-check -q
  if ! sha_ok; then
    echo "fetch-format-suite: $CACHE/$SDIST is missing or its sha256 is not $SHA256" >&2
    exit 1
  fi
fi

# Extract into a scratch directory and move it into place, so an interrupted run leaves no
# half-filled suite behind.
TMP=$(mktemp -d "$CACHE/.suite.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
tar -xzf "$CACHE/$SDIST" -C "$TMP" --wildcards "$MEMBER/*.json"
mkdir -p "$TMP/out/draft2020-12/optional"
mv "$TMP/$MEMBER" "$TMP/out/draft2020-12/optional/format"
echo "$SDIST $SHA256" >"$TMP/out/.source"
rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
mv "$TMP/out" "$DEST"
log "$(ls "$DEST/draft2020-12/optional/format" | wc -l) format files in $DEST/draft2020-12/optional/format"

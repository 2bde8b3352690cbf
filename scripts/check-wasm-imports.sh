#!/usr/bin/env bash
# Usage: scripts/check-wasm-imports.sh FILE.wasm
# Lists the imports of a WebAssembly module and fails if any comes from a module other than
# wasm-bindgen's own (__wbindgen_placeholder__, __wbindgen_externref_xform__, wbg): the protocol
# core must not depend on host functions. Builds nothing itself.
set -euo pipefail
if [ $# -ne 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  echo "usage: $0 FILE.wasm" >&2
  exit 2
fi
WASM=$1
if [ ! -f "$WASM" ]; then
  echo "check-wasm-imports: no such file: $WASM" >&2
  exit 2
fi
node --input-type=module - "$WASM" <<'JS'
import { readFileSync } from 'node:fs';
const file = process.argv[2];
const allowed = new Set(['__wbindgen_placeholder__', '__wbindgen_externref_xform__', 'wbg']);
let imports;
try {
  imports = WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(file)));
} catch (e) {
  console.error(`check-wasm-imports: ${file}: not a valid WebAssembly module: ${e.message}`);
  process.exit(2);
}
const bad = imports.filter((i) => !allowed.has(i.module));
console.log(`check-wasm-imports: ${file}: ${imports.length} import(s)`);
for (const i of imports) {
  console.log(`  ${allowed.has(i.module) ? ' ' : '!'} ${i.module}.${i.name} (${i.kind})`);
}
if (bad.length) {
  const mods = [...new Set(bad.map((i) => i.module))].join(', ');
  console.error(`check-wasm-imports: ${bad.length} host import(s) outside wasm-bindgen's own, from: ${mods}`);
  process.exit(1);
}
console.log('check-wasm-imports: only wasm-bindgen imports');
JS

// Usage: node scripts/wasm-code-sizes.mjs FILE.wasm [N]
// Which crates weigh most in a WebAssembly module cargo linked (before wasm-bindgen and wasm-opt,
// while it still has its `name` section): each function body's bytes, summed by the first two
// path segments of its (legacy-mangled) name, the N largest (default 25). Builds nothing.
import { readFileSync } from 'node:fs';

const [file, top = '25'] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/wasm-code-sizes.mjs FILE.wasm [N]');
  process.exit(2);
}
const b = readFileSync(file);
let p = 8;
function leb() {
  let r = 0;
  let s = 0;
  let x;
  do {
    x = b[p++];
    r += (x & 0x7f) * 2 ** s;
    s += 7;
  } while (x & 0x80);
  return r;
}
function skipLimits() {
  const flags = b[p++];
  leb();
  if (flags & 1) leb();
}
let imported = 0;
const bodies = [];
const names = new Map();
while (p < b.length) {
  const id = b[p++];
  const size = leb();
  const end = p + size;
  if (id === 2) {
    for (let i = 0, n = leb(); i < n; i++) {
      // Module and field names (`p += leb()` would add to the position before the length).
      for (let j = 0; j < 2; j++) {
        const len = leb();
        p += len;
      }
      const kind = b[p++];
      if (kind === 0) {
        leb();
        imported++;
      } else if (kind === 1) {
        p++;
        skipLimits();
      } else if (kind === 2) skipLimits();
      else if (kind === 3) p += 2;
      else if (kind === 4) {
        p++;
        leb();
      }
    }
  } else if (id === 10) {
    for (let i = 0, n = leb(); i < n; i++) {
      const s = leb();
      bodies.push(s);
      p += s;
    }
  } else if (id === 0) {
    const l = leb();
    const name = b.subarray(p, p + l).toString();
    p += l;
    while (name === 'name' && p < end) {
      const sub = b[p++];
      const subSize = leb();
      const subEnd = p + subSize;
      if (sub === 1) {
        for (let i = 0, n = leb(); i < n; i++) {
          const idx = leb();
          const len = leb();
          names.set(idx, b.subarray(p, p + len).toString());
          p += len;
        }
      }
      p = subEnd;
    }
  }
  p = end;
}
function group(name) {
  const m = /^_ZN(\d+)/.exec(name);
  if (!m) return name.slice(0, 40);
  const first = name.substr(m[0].length, Number(m[1]));
  const rest = name.substr(m[0].length + Number(m[1]));
  const n = /^(\d+)/.exec(rest);
  return n ? `${first}::${rest.substr(n[0].length, Number(n[1]))}` : first;
}
const by = new Map();
let total = 0;
bodies.forEach((s, i) => {
  const g = group(names.get(i + imported) || '?');
  by.set(g, (by.get(g) || 0) + s);
  total += s;
});
console.log(`${file}: ${total} B of code in ${bodies.length} functions`);
for (const [k, v] of [...by.entries()].sort((a, c) => c[1] - a[1]).slice(0, Number(top))) {
  console.log(`${String(v).padStart(9)} ${k}`);
}

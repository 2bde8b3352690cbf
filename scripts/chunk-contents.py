#!/usr/bin/env python3
"""Where a lazily loaded view's bytes are (docs/console.md "Sizes"): for each view, its
split_<view>.wasm and every shared chunk its loader waits for, as sent (NAME.gz of a release
build), the other views that share each chunk, and the largest Rust modules in the chunk by code
size, read from the function names of the same split before wasm-opt strips them.

Usage:
  wasm-split-cli --target web --out-name app \\
      target/wasm32-unknown-unknown/wasm-release/app.wasm /tmp/split   # names kept
  scripts/chunk-contents.py dist/pkg/<hash> /tmp/split [view ...]

The chunk numbering of both splits is the same (the same module, the same tool). Python 3, no
packages: the wasm sections are read here (import, code and name sections only).
"""
import collections
import os
import re
import sys


def leb(b, i):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def sections(b):
    i = 8
    while i < len(b):
        sid = b[i]
        size, i = leb(b, i + 1)
        yield sid, b[i:i + size]
        i += size


def functions(path):
    """(code size, name) of each function defined in the module."""
    b = open(path, 'rb').read()
    imported, sizes, names = 0, [], {}
    for sid, d in sections(b):
        if sid == 2:  # imports: count the functions, skip the rest
            n, j = leb(d, 0)
            for _ in range(n):
                for _ in range(2):
                    ln, j = leb(d, j)
                    j += ln
                kind = d[j]
                j += 1
                if kind == 0:
                    _, j = leb(d, j)
                    imported += 1
                elif kind == 1:
                    flags, j = leb(d, j + 1)
                    _, j = leb(d, j)
                    if flags & 1:
                        _, j = leb(d, j)
                elif kind == 2:
                    flags, j = leb(d, j)
                    _, j = leb(d, j)
                    if flags & 1:
                        _, j = leb(d, j)
                else:
                    j += 2
        elif sid == 10:
            n, j = leb(d, 0)
            for _ in range(n):
                size, j = leb(d, j)
                sizes.append(size)
                j += size
        elif sid == 0:
            ln, j = leb(d, 0)
            if d[j:j + ln] != b'name':
                continue
            j += ln
            while j < len(d):
                sub = d[j]
                size, j = leb(d, j + 1)
                if sub == 1:
                    n, k = leb(d, j)
                    for _ in range(n):
                        idx, k = leb(d, k)
                        ln, k = leb(d, k)
                        names[idx] = d[k:k + ln].decode('utf-8', 'replace')
                        k += ln
                j += size
    return [(s, names.get(imported + i, '?')) for i, s in enumerate(sizes)]


def module_of(name, depth=3):
    """`crate::module::item` of a legacy-mangled name, else the name's start."""
    if name.startswith('_ZN'):
        i, parts = 3, []
        while i < len(name) and name[i].isdigit():
            j = i
            while name[j].isdigit():
                j += 1
            ln = int(name[i:j])
            parts.append(name[j:j + ln])
            i = j + ln
        parts = [p for p in parts if not re.fullmatch(r'h[0-9a-f]{16}', p)]
        if parts and not parts[0].startswith('_$LT$'):
            return '::'.join(parts[:depth])
        name = parts[0] if parts else name
    m = re.search(r'\$LT\$([a-z_0-9]+(?:\.\.[a-z_0-9]+){0,2})', name)
    return ('<' + m.group(1).replace('..', '::') + '>') if m else name[:60]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    pkg, split, only = sys.argv[1], sys.argv[2], sys.argv[3:]
    loaders = {}
    text = open(os.path.join(pkg, '__wasm_split.js')).read()
    for view, deps in re.findall(r'export const __wasm_split_load_(\w+) = .*?\[([^\]]*)\]\)\);', text, re.S):
        loaders[view] = [int(c) for c in re.findall(r'__chunk_(\d+)', deps)]
    users = collections.defaultdict(list)
    for view, chunks in loaders.items():
        for c in chunks:
            users[c].append(view)

    def sent(f):
        gz = os.path.join(pkg, f + '.gz')
        return os.path.getsize(gz) if os.path.exists(gz) else 0

    for view in sorted(only or loaders):
        files = [('split_%s.wasm' % view, [view])] + [
            ('chunk_%d.wasm' % c, users[c]) for c in loaders[view]]
        files.sort(key=lambda f: -sent(f[0]))
        print('%s adds %d B as sent (%d files)' % (view, sum(sent(f) for f, _ in files), len(files)))
        for f, shared in files[:6]:
            code = collections.Counter()
            path = os.path.join(split, f)
            if os.path.exists(path):
                for size, name in functions(path):
                    code[module_of(name)] += size
            top = ', '.join('%s %d' % (m, s) for m, s in code.most_common(4))
            print('  %-20s %7d B sent, shared with %-28s %s' % (
                f, sent(f), ','.join(v for v in shared if v != view) or '-', top))
        rest = files[6:]
        if rest:
            print('  %d smaller files: %d B sent' % (len(rest), sum(sent(f) for f, _ in rest)))


if __name__ == '__main__':
    main()

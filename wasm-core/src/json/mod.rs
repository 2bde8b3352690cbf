//! Strict JSON, lossless values and RFC 8785 canonicalization (checklist D-2, D-3).

pub mod jcs;
pub mod parse;
pub mod value;

#[cfg(all(test, not(target_arch = "wasm32")))]
mod reference;
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;

pub use jcs::{
    JcsError, canonical_str_into, canonicalize, canonicalize_into, canonicalize_without,
    make_canonical, sort_canonical,
};
pub use parse::{ParseError, ParseErrorKind, parse, parse_str};
pub use value::{JsonString, MAX_SAFE_INTEGER, Number, Object, Value};

/// Serializes a value as compact JSON, preserving member order and number spellings.
/// Unlike [`canonicalize`] it never fails and stays lossless: an unpaired surrogate is written
/// as its `\uXXXX` escape, so the output parses back to the same value.
pub fn to_string(v: &Value) -> String {
    let mut out = String::with_capacity(256);
    write_compact(v, &mut out);
    out
}

fn write_compact(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(n.as_lexical()),
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(item, out);
            }
            out.push(']');
        }
        Value::Object(obj) => {
            out.push('{');
            for (i, (k, v)) in obj.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(k, out);
                out.push(':');
                write_compact(v, out);
            }
            out.push('}');
        }
    }
}

fn write_json_string(s: &JsonString, out: &mut String) {
    out.push('"');
    match s.ill_formed_units() {
        None => write_escaped(s.as_str(), out),
        Some(units) => {
            for r in char::decode_utf16(units.iter().copied()) {
                match r {
                    Ok(c) => write_escaped(c.encode_utf8(&mut [0u8; 4]), out),
                    Err(e) => push_u_escape(e.unpaired_surrogate(), out),
                }
            }
        }
    }
    out.push('"');
}

/// The string body with `"`, `\`, `\n`, `\r`, `\t` escaped by name and other controls as
/// `\u00xx`; unescaped runs are copied whole.
fn write_escaped(s: &str, out: &mut String) {
    let mut rest = s;
    loop {
        let Some((run, tail)) = rest.split_at_checked(plain_run(rest.as_bytes())) else {
            // Unreachable: a run ends at an ASCII byte or at the end.
            return out.push_str(rest);
        };
        out.push_str(run);
        let Some(&b) = tail.as_bytes().first() else {
            return;
        };
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            _ => push_u_escape(u16::from(b), out),
        }
        rest = tail.get(1..).unwrap_or_default();
    }
}

/// `\u` and four lowercase hex digits.
fn push_u_escape(unit: u16, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        out.push(char::from(HEX[usize::from((unit >> shift) & 0xF)]));
    }
}

/// The length of the leading run of `bytes` that a JSON string holds verbatim: up to the
/// first `"`, `\` or control below 0x20. Checks eight bytes per step (SWAR) because strings are
/// mostly long plain runs (identifiers, hashes, signatures); the lowest flagged byte of each
/// test is always a true hit, so the first hit found is exact.
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        // (`^` for either `|` below gives the same lowest bit, so cargo-mutants' `| → ^` survives:
        // no byte is `"`, `\` and a control at once, and a test's false positives lie only
        // above its own true hit, so the lowest flagged byte is flagged by one test alone.)
        let hits = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (w.wrapping_sub(ONES * 0x20) & !w))
            & HIGHS;
        if hits != 0 {
            return at + (hits.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let tail = chunks.remainder();
    at + tail
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(tail.len())
}

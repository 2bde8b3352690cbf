//! Strict JSON, lossless values and RFC 8785 canonicalization (checklist D-2, D-3).

pub mod jcs;
pub mod parse;
pub mod value;

pub use jcs::{JcsError, canonicalize, canonicalize_without};
pub use parse::{ParseError, ParseErrorKind, parse, parse_str};
pub use value::{JsonString, MAX_SAFE_INTEGER, Number, Object, Value};

/// Serializes a value as compact JSON, preserving member order and number spellings.
/// Unlike [`canonicalize`] it never fails and stays lossless: an unpaired surrogate is written
/// as its `\uXXXX` escape, so the output parses back to the same value.
pub fn to_string(v: &Value) -> String {
    let mut out = String::new();
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
    let Some(units) = s.ill_formed_units() else {
        return write_compact_string(s.as_str(), out);
    };
    out.push('"');
    for r in char::decode_utf16(units.iter().copied()) {
        match r {
            Ok(c) => {
                let mut buf = [0u8; 4];
                let text = c.encode_utf8(&mut buf);
                let mut escaped = String::new();
                write_compact_string(text, &mut escaped);
                out.push_str(&escaped[1..escaped.len() - 1]);
            }
            Err(e) => out.push_str(&format!("\\u{:04x}", e.unpaired_surrogate())),
        }
    }
    out.push('"');
}

fn write_compact_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

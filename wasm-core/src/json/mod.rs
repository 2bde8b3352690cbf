//! Strict JSON, lossless values and RFC 8785 canonicalization (checklist D-2, D-3).

pub mod jcs;
pub mod parse;
pub mod value;

pub use jcs::{JcsError, canonicalize, canonicalize_without};
pub use parse::{ParseError, ParseErrorKind, parse, parse_str};
pub use value::{JsonString, MAX_SAFE_INTEGER, Number, Object, Value};

/// Serializes a value as compact JSON, preserving member order and number spellings.
/// Unlike [`canonicalize`] it never fails: ill-formed strings are written with U+FFFD.
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
        Value::String(s) => write_compact_string(s.as_str(), out),
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
                write_compact_string(k.as_str(), out);
                out.push(':');
                write_compact(v, out);
            }
            out.push('}');
        }
    }
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

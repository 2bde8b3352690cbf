//! RFC 8785 JSON Canonicalization Scheme (checklist D-3), over the lossless [`Value`].
//!
//! Why not `serde_json_canonicalizer` directly: it canonicalizes a `serde_json::Value`, which
//! cannot hold `1e400` or an unpaired surrogate, so those inputs would fail in the parser
//! (stage 1) instead of here (stage 5, §6.4). Measured against the official vectors and the RFC's
//! §3.2.2 example it is otherwise right, and the tests use it as a differential oracle. Its number
//! formatting comes from `ryu-js` (ECMAScript `Number::toString`), which we use too; key order by
//! UTF-16 code units and the minimal string escapes are written here.

use super::value::{JsonString, Value};
use std::cmp::Ordering;
use std::fmt;

/// A value outside the RFC 8785 / I-JSON data model (§2): stage-5 failure, `PROTOCOL_VIOLATION`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JcsError {
    NonFiniteNumber { pointer: String, literal: String },
    UnpairedSurrogate { pointer: String },
}

impl fmt::Display for JcsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JcsError::NonFiniteNumber { pointer, literal } => write!(
                f,
                "number {literal} at {} is outside the finite binary64 range",
                display_pointer(pointer)
            ),
            JcsError::UnpairedSurrogate { pointer } => write!(
                f,
                "string at {} contains an unpaired UTF-16 surrogate",
                display_pointer(pointer)
            ),
        }
    }
}

impl std::error::Error for JcsError {}

fn display_pointer(p: &str) -> &str {
    if p.is_empty() { "the document root" } else { p }
}

/// Canonical bytes of `value`.
pub fn canonicalize(value: &Value) -> Result<Vec<u8>, JcsError> {
    let mut out = Vec::with_capacity(256);
    let mut path = String::new();
    write_value(value, &mut out, &mut path)?;
    Ok(out)
}

/// Canonical bytes of an object with one top-level member left out: the §6.4 signing input
/// omits exactly the top-level `signature` while nested `signature` members stay protected.
pub fn canonicalize_without(value: &Value, top_level_member: &str) -> Result<Vec<u8>, JcsError> {
    match value {
        Value::Object(obj) => {
            let mut out = Vec::with_capacity(256);
            let mut path = String::new();
            write_object(
                obj.iter()
                    .filter(|(k, _)| !(k.is_well_formed() && k.as_str() == top_level_member)),
                &mut out,
                &mut path,
            )?;
            Ok(out)
        }
        other => canonicalize(other),
    }
}

fn write_value(v: &Value, out: &mut Vec<u8>, path: &mut String) -> Result<(), JcsError> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            let f = n.to_f64();
            if !f.is_finite() {
                return Err(JcsError::NonFiniteNumber {
                    pointer: path.clone(),
                    literal: n.as_lexical().to_owned(),
                });
            }
            let mut buf = ryu_js::Buffer::new();
            out.extend_from_slice(buf.format_finite(f).as_bytes());
        }
        Value::String(s) => write_string(s, out, path)?,
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                write_value(item, out, path)?;
                path.truncate(len);
            }
            out.push(b']');
        }
        Value::Object(obj) => write_object(obj.iter(), out, path)?,
    }
    Ok(())
}

fn write_object<'a>(
    members: impl Iterator<Item = (&'a JsonString, &'a Value)>,
    out: &mut Vec<u8>,
    path: &mut String,
) -> Result<(), JcsError> {
    let mut members: Vec<(&JsonString, &Value)> = members.collect();
    for (k, _) in &members {
        if !k.is_well_formed() {
            return Err(JcsError::UnpairedSurrogate {
                pointer: format!("{path}/{}", escape_pointer(k.as_str())),
            });
        }
    }
    members.sort_by(|(a, _), (b, _)| utf16_cmp(a.as_str(), b.as_str()));
    out.push(b'{');
    for (i, (k, v)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(k, out, path)?;
        out.push(b':');
        let len = path.len();
        path.push('/');
        path.push_str(&escape_pointer(k.as_str()));
        write_value(v, out, path)?;
        path.truncate(len);
    }
    out.push(b'}');
    Ok(())
}

/// RFC 8785 §3.2.3: member names sort by their UTF-16 code units, not by UTF-8 bytes or
/// scalar values (they differ above U+FFFF versus U+E000..U+FFFF).
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn write_string(s: &JsonString, out: &mut Vec<u8>, path: &str) -> Result<(), JcsError> {
    if !s.is_well_formed() {
        return Err(JcsError::UnpairedSurrogate {
            pointer: path.to_owned(),
        });
    }
    out.push(b'"');
    let bytes = s.as_str().as_bytes();
    // Copy runs that need no escape in one go; only `"`, `\\` and controls are escaped.
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b != b'"' && b != b'\\' && b >= 0x20 {
            continue;
        }
        out.extend_from_slice(&bytes[run..i]);
        run = i + 1;
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0C => out.extend_from_slice(b"\\f"),
            0x0D => out.extend_from_slice(b"\\r"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xF)]);
            }
        }
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
    Ok(())
}

/// The canonical `"name":value` bytes of each top-level member of `obj`, in canonical order:
/// lets a signer canonicalize a document once and then add its `signature` member (the Group
/// Authority seals every Event this way) instead of canonicalizing twice.
pub fn canonical_members(obj: &crate::json::Object) -> Result<Vec<(String, Vec<u8>)>, JcsError> {
    let mut parts = Vec::with_capacity(obj.len());
    for (k, v) in obj.iter() {
        let mut path = String::new();
        let mut bytes = Vec::with_capacity(64);
        write_string(k, &mut bytes, &path)?;
        bytes.push(b':');
        path.push('/');
        path.push_str(&escape_pointer(k.as_str()));
        write_value(v, &mut bytes, &mut path)?;
        parts.push((k.as_str().to_owned(), bytes));
    }
    parts.sort_by(|a, b| utf16_cmp(&a.0, &b.0));
    Ok(parts)
}

/// Joins canonical members (as produced by [`canonical_members`], kept in order) into the
/// canonical object bytes.
pub fn join_members(parts: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.1.len() + 1).sum::<usize>() + 2);
    out.push(b'{');
    for (i, (_, m)) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(m);
    }
    out.push(b'}');
    out
}

/// Inserts one more canonical member into `parts`, keeping the canonical order.
pub fn insert_member(
    parts: &mut Vec<(String, Vec<u8>)>,
    name: &str,
    value: &Value,
) -> Result<(), JcsError> {
    let mut bytes = Vec::with_capacity(128);
    let mut path = format!("/{}", escape_pointer(name));
    write_string(&JsonString::from(name), &mut bytes, "")?;
    bytes.push(b':');
    write_value(value, &mut bytes, &mut path)?;
    let at = parts.partition_point(|(k, _)| utf16_cmp(k, name) == Ordering::Less);
    parts.insert(at, (name.to_owned(), bytes));
    Ok(())
}

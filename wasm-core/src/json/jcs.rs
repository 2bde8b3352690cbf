//! RFC 8785 JSON Canonicalization Scheme (checklist D-3), over the lossless [`Value`].
//!
//! Why not `serde_json_canonicalizer` directly: it canonicalizes a `serde_json::Value`, which
//! cannot hold `1e400` or an unpaired surrogate, so those inputs would fail in the parser
//! (stage 1) instead of here (stage 5, §6.4). Measured against the official vectors and the RFC's
//! §3.2.2 example it is otherwise right, and the tests use it as a differential oracle. Its number
//! formatting comes from `ryu-js` (ECMAScript `Number::toString`), which we use too; key order by
//! UTF-16 code units and the minimal string escapes are written here.

use super::plain_run;
pub use super::value::utf16_cmp;
use super::value::{JsonString, Number, Object, Value};
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
    let mut out = Vec::with_capacity(512);
    write_value(value, &mut out)?;
    Ok(out)
}

/// [`canonicalize`] appending to `out` (a caller canonicalizing many values in turn reuses one
/// buffer). On error `out` may hold part of the value.
pub fn canonicalize_into(value: &Value, out: &mut Vec<u8>) -> Result<(), JcsError> {
    write_value(value, out)
}

/// A well-formed string's canonical bytes appended to `out` (a Rust `str` has no unpaired
/// surrogate, so this cannot fail).
pub fn canonical_str_into(s: &str, out: &mut Vec<u8>) {
    write_str(s, out);
}

/// Canonical bytes of an object with one top-level member left out: the §6.4 signing input
/// omits exactly the top-level `signature` while nested `signature` members stay protected.
pub fn canonicalize_without(value: &Value, top_level_member: &str) -> Result<Vec<u8>, JcsError> {
    match value {
        Value::Object(obj) => {
            let mut out = Vec::with_capacity(512);
            write_object(obj, Some(top_level_member), &mut out, None)?;
            Ok(out)
        }
        other => canonicalize(other),
    }
}

/// Prefixes the error's pointer with one more (escaped) segment. Pointers are built on the way
/// out of the recursion, so the success path never formats a path.
fn within(mut e: JcsError, segment: &str) -> JcsError {
    let (JcsError::NonFiniteNumber { pointer, .. } | JcsError::UnpairedSurrogate { pointer }) =
        &mut e;
    pointer.insert_str(0, segment);
    pointer.insert(0, '/');
    e
}

fn write_value(v: &Value, out: &mut Vec<u8>) -> Result<(), JcsError> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out)?,
        Value::String(s) => write_string(s, out)?,
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out).map_err(|e| within(e, &i.to_string()))?;
            }
            out.push(b']');
        }
        Value::Object(obj) => write_object(obj, None, out, None)?,
    }
    Ok(())
}

/// Objects with at most this many members are sorted through positions on the stack.
const STACK_MEMBERS: usize = 32;

/// Writes `obj` leaving out member `skip`; with `slot`, also records where in `out` a member
/// named `skip` would start (the first member sorting after it), if any does.
fn write_object(
    obj: &Object,
    skip: Option<&str>,
    out: &mut Vec<u8>,
    mut slot: Option<&mut Option<usize>>,
) -> Result<(), JcsError> {
    let members = obj.members();
    let kept = |k: &JsonString| !skip.is_some_and(|s| k.is_well_formed() && k.as_str() == s);
    // Names are checked in wire order before any value, so the error does not depend on order.
    for (k, _) in members {
        if kept(k) && !k.is_well_formed() {
            return Err(JcsError::UnpairedSurrogate {
                pointer: format!("/{}", escape_pointer(k.as_str())),
            });
        }
    }
    let mut stack = [0usize; STACK_MEMBERS];
    let mut heap = Vec::new();
    let order: &mut [usize] = if members.len() <= STACK_MEMBERS {
        &mut stack
    } else {
        heap.resize(members.len(), 0);
        &mut heap
    };
    let mut n = 0;
    for (i, (k, _)) in members.iter().enumerate() {
        if kept(k) {
            order[n] = i;
            n += 1;
        }
    }
    let order = &mut order[..n];
    // Names are unique, so an unstable sort (no allocation) has only one possible result.
    order.sort_unstable_by(|&a, &b| utf16_cmp(members[a].0.as_str(), members[b].0.as_str()));
    out.push(b'{');
    for (pos, &i) in order.iter().enumerate() {
        let (k, v) = &members[i];
        if pos > 0 {
            out.push(b',');
        }
        if let (Some(at), Some(name)) = (slot.as_deref_mut(), skip)
            && at.is_none()
            && utf16_cmp(name, k.as_str()) == Ordering::Less
        {
            *at = Some(out.len());
        }
        write_str(k.as_str(), out);
        out.push(b':');
        write_value(v, out).map_err(|e| within(e, &escape_pointer(k.as_str())))?;
    }
    out.push(b'}');
    Ok(())
}

/// Writes the ECMAScript `Number::toString` spelling (RFC 8785 §3.2.2.3).
fn write_number(n: &Number, out: &mut Vec<u8>) -> Result<(), JcsError> {
    let text = n.as_lexical();
    if is_canonical_integer(text) {
        out.extend_from_slice(text.as_bytes());
        return Ok(());
    }
    let f = n.to_f64();
    if !f.is_finite() {
        return Err(JcsError::NonFiniteNumber {
            pointer: String::new(),
            literal: text.to_owned(),
        });
    }
    let mut buf = ryu_js::Buffer::new();
    out.extend_from_slice(buf.format_finite(f).as_bytes());
    Ok(())
}

/// True when `text` already is its own ECMAScript spelling, so it needs no float conversion: an
/// integer of at most 15 digits without leading zero, other than `-0`. Such a value is below
/// 10^15 < 2^53, hence exact in binary64, and `Number::toString` writes an integer below 10^21
/// as its plain decimal digits (with `-` when negative; `-0` becomes `0`, hence excluded).
/// A shortcut only: answering `false` (cargo-mutants' surviving `false` and deleted arms, and
/// the guard in [`make_canonical`] replaced by `true`) takes the float path, which writes the same
/// bytes for every such integer, only slower.
fn is_canonical_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text).as_bytes();
    match digits {
        [b'0'] => digits.len() == text.len(),
        [b'1'..=b'9', rest @ ..] => rest.len() < 15 && rest.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

fn write_string(s: &JsonString, out: &mut Vec<u8>) -> Result<(), JcsError> {
    if !s.is_well_formed() {
        return Err(JcsError::UnpairedSurrogate {
            pointer: String::new(),
        });
    }
    write_str(s.as_str(), out);
    Ok(())
}

/// A well-formed string with the minimal JCS escapes (`"`, `\\` and controls only); the runs
/// between them are copied whole.
fn write_str(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let mut rest = s.as_bytes();
    loop {
        let run = plain_run(rest);
        out.extend_from_slice(rest.get(..run).unwrap_or_default());
        let Some((&b, tail)) = rest.get(run..).and_then(<[u8]>::split_first) else {
            break;
        };
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
        rest = tail;
    }
    out.push(b'"');
}

/// An object's canonical bytes with a place kept for one more top-level member (`slot`):
/// lets a signer canonicalize a document once, sign those bytes (the §6.4 signing input leaves
/// the `signature` member out), and then write the signed document by inserting the member
/// (the Group Authority seals every Event this way) instead of canonicalizing twice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slotted {
    /// The canonical bytes without the slot's member.
    pub bytes: Vec<u8>,
    slot: &'static str,
    /// Byte offset where the member goes.
    at: usize,
    /// What surrounds it there: `"m":v,` before a member, `,"m":v` after the last one, or
    /// `"m":v` alone in an empty object.
    place: Place,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    BeforeMember,
    AfterLast,
    Alone,
}

/// Canonicalizes `obj` (which must not contain `slot`; if it does, that member is left out
/// like [`canonicalize_without`] does) and keeps the place of `slot` in canonical order.
pub fn canonical_with_slot(obj: &Object, slot: &'static str) -> Result<Slotted, JcsError> {
    let mut bytes = Vec::with_capacity(1024);
    let mut before = None;
    write_object(obj, Some(slot), &mut bytes, Some(&mut before))?;
    let (at, place) = match before {
        Some(at) => (at, Place::BeforeMember),
        None if bytes.len() == 2 => (1, Place::Alone),
        None => (bytes.len() - 1, Place::AfterLast),
    };
    Ok(Slotted {
        bytes,
        slot,
        at,
        place,
    })
}

impl Slotted {
    /// The canonical bytes of the object with `value` as the slot's member.
    pub fn fill(&self, value: &Value) -> Result<Vec<u8>, JcsError> {
        let mut member = Vec::with_capacity(160);
        if self.place == Place::AfterLast {
            member.push(b',');
        }
        write_str(self.slot, &mut member);
        member.push(b':');
        write_value(value, &mut member).map_err(|e| within(e, &escape_pointer(self.slot)))?;
        if self.place == Place::BeforeMember {
            member.push(b',');
        }
        let mut out = Vec::with_capacity(self.bytes.len() + member.len());
        out.extend_from_slice(&self.bytes[..self.at]);
        out.extend_from_slice(&member);
        out.extend_from_slice(&self.bytes[self.at..]);
        Ok(out)
    }
}

/// Reorders the members of every object, at any depth, into JCS order (UTF-16 code units, as
/// [`utf16_cmp`]) and changes nothing else: afterwards member order is what parsing the
/// value's canonical bytes gives. Numbers keep their spelling, so the result equals
/// `parse(canonicalize(v))` only up to number spelling (`1.50` stays `1.50` where JCS writes
/// `1.5`); [`make_canonical`] also respells them. Names with an unpaired surrogate (which JCS
/// refuses) are ordered by their code units too.
pub fn sort_canonical(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(sort_canonical),
        Value::Object(obj) => {
            let members = obj.members_mut();
            // Names are unique, so an unstable sort (no allocation) has only one result.
            members.sort_unstable_by(|a, b| name_cmp(&a.0, &b.0));
            for (_, v) in members {
                sort_canonical(v);
            }
        }
        _ => {}
    }
}

/// [`sort_canonical`], and every finite number respelled as JCS writes it: for a value that
/// [`canonicalize`] accepts, the result equals `parse(canonicalize(v))` exactly, so a signer can
/// keep the value it just canonicalized instead of parsing the bytes back. Non-finite numbers
/// (which JCS refuses) keep their spelling.
pub fn make_canonical(value: &mut Value) {
    match value {
        Value::Number(n) if !is_canonical_integer(n.as_lexical()) => {
            if let Some(c) = Number::from_f64(n.to_f64())
                && c != *n
            {
                *n = c;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(make_canonical),
        Value::Object(obj) => {
            let members = obj.members_mut();
            members.sort_unstable_by(|a, b| name_cmp(&a.0, &b.0));
            for (_, v) in members {
                make_canonical(v);
            }
        }
        _ => {}
    }
}

/// [`utf16_cmp`] extended to names that hold unpaired surrogates (compared by code units).
fn name_cmp(a: &JsonString, b: &JsonString) -> Ordering {
    if a.is_well_formed() && b.is_well_formed() {
        return utf16_cmp(a.as_str(), b.as_str());
    }
    let units = |s: &JsonString| -> Vec<u16> {
        s.ill_formed_units()
            .map_or_else(|| s.as_str().encode_utf16().collect(), <[u16]>::to_vec)
    };
    units(a).cmp(&units(b))
}

#[cfg(test)]
mod tests {
    use super::canonicalize;
    use crate::json::parse;

    /// The error names where the value is, and the root in words (an empty pointer would read
    /// "string at  contains…").
    #[test]
    fn an_error_names_its_pointer_and_the_root_in_words() {
        let message = |text: &[u8]| {
            let v = parse(text).expect("the parser keeps both values losslessly");
            canonicalize(&v)
                .expect_err("outside the I-JSON model")
                .to_string()
        };
        assert_eq!(
            message(br#""\ud800""#),
            "string at the document root contains an unpaired UTF-16 surrogate"
        );
        assert_eq!(
            message(br#"{"a":["x","\udc00"]}"#),
            "string at /a/1 contains an unpaired UTF-16 surrogate"
        );
        assert_eq!(
            message(b"1e400"),
            "number 1e400 at the document root is outside the finite binary64 range"
        );
        assert_eq!(
            message(br#"{"n":-1e400}"#),
            "number -1e400 at /n is outside the finite binary64 range"
        );
    }
}

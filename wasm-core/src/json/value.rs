//! The lossless JSON value produced by the strict parser (D-2).
//!
//! Numbers keep their lexical text and strings keep unpaired surrogates, so that a value outside
//! the finite binary64 domain or a lone surrogate survives parsing and is rejected at the JCS
//! stage (§6.4 stage 5), not at parse (stage 1).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

/// A JSON value whose numbers and strings are lossless.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(Number),
    String(JsonString),
    Array(Vec<Value>),
    Object(Object),
}

impl Value {
    /// The JSON type name as JSON Schema spells it, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_integer() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// Follows an RFC 6901 JSON Pointer (only `/name` and `/index` segments, with `~0`/`~1`).
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        let mut cur = self;
        for raw in rest.split('/') {
            // Unescape only when needed: pointers are followed on every Command and Event.
            let seg: std::borrow::Cow<'_, str> = if raw.contains('~') {
                raw.replace("~1", "/").replace("~0", "~").into()
            } else {
                raw.into()
            };
            cur = match cur {
                Value::Object(o) => o.get(&seg)?,
                Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// A string value; a literal of the program is borrowed, not copied.
    pub fn string(s: impl Into<JsonString>) -> Value {
        Value::String(s.into())
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::string(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::string(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Self {
        Value::Number(Number::from_u64(n))
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        if n >= 0 {
            Value::from(n as u64)
        } else {
            Value::Number(
                crate::json::Number::from_f64(n as f64)
                    .unwrap_or_else(|| crate::json::Number::from_u64(0)),
            )
        }
    }
}

/// A JSON number as its validated RFC 8259 lexical text.
#[derive(Clone)]
pub struct Number(Lexical);

/// Number text up to this many bytes is stored inline, so typical numbers cost no allocation
/// (on 64-bit targets every integer up to 2^64 and every ECMAScript-spelled binary64 fits).
/// Sized so that `Value` is no larger for it: its string variant is bigger.
const INLINE: usize = if cfg!(target_pointer_width = "64") {
    30
} else {
    18
};

#[derive(Clone)]
enum Lexical {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<str>),
}

impl Number {
    /// Wraps text that the parser has already matched against the number grammar.
    pub(crate) fn from_lexical(text: &str) -> Number {
        let len = text.len();
        if len <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..len].copy_from_slice(text.as_bytes());
            Number(Lexical::Inline {
                len: len as u8,
                bytes,
            })
        } else {
            Number(Lexical::Heap(text.into()))
        }
    }

    pub fn from_u64(n: u64) -> Number {
        // At most 20 digits, written from the right.
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = n;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        Number::from_lexical(std::str::from_utf8(&digits[at..]).unwrap_or("0"))
    }

    /// A finite binary64 in its ECMAScript spelling; `None` for NaN or an infinity.
    pub fn from_f64(f: f64) -> Option<Number> {
        if !f.is_finite() {
            return None;
        }
        let mut buf = ryu_js::Buffer::new();
        Some(Number::from_lexical(buf.format_finite(f)))
    }

    pub fn as_lexical(&self) -> &str {
        match &self.0 {
            // Only ever filled from a `&str`, so the check cannot fail.
            Lexical::Inline { len, bytes } => {
                std::str::from_utf8(bytes.get(..usize::from(*len)).unwrap_or_default())
                    .unwrap_or_default()
            }
            Lexical::Heap(text) => text,
        }
    }

    /// The correctly rounded binary64 value (RFC 8785 §3.2.2.3); infinite when out of range.
    pub fn to_f64(&self) -> f64 {
        // The lexical form is a strict subset of what `f64::from_str` accepts, and Rust's
        // conversion is correctly rounded, as §2 requires of arbitrary-precision inputs.
        self.as_lexical().parse::<f64>().unwrap_or(f64::NAN)
    }

    /// True when the value is a mathematical integer (JSON Schema's `integer`, so `1.0` counts).
    pub fn is_integer(&self) -> bool {
        let f = self.to_f64();
        f.is_finite() && f.fract() == 0.0
    }

    /// The value as a non-negative safe integer (0 ..= 2^53 - 1), the §2 range for sequences,
    /// revisions, epochs and budgets.
    pub fn as_safe_u64(&self) -> Option<u64> {
        let f = self.to_f64();
        if f.is_finite() && f.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER as f64).contains(&f) {
            Some(f as u64)
        } else {
            None
        }
    }
}

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        self.as_lexical() == other.as_lexical()
    }
}

impl Eq for Number {}

impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Number").field(&self.as_lexical()).finish()
    }
}

/// 2^53 - 1, the largest integer every JSON peer represents exactly (I-JSON, RFC 7493).
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// A decoded JSON string that can still hold unpaired UTF-16 surrogates.
#[derive(Clone, Debug)]
pub struct JsonString {
    /// The text, with any unpaired surrogate replaced by U+FFFD. Borrowed when it is a
    /// literal of the program (member names, fixed values): building an Event or a record
    /// then allocates nothing for them.
    text: Cow<'static, str>,
    /// The exact UTF-16 code units, kept only when the text holds an unpaired surrogate.
    ill_formed: Option<Box<[u16]>>,
}

impl JsonString {
    pub(crate) fn from_utf16_lossless(units: Vec<u16>) -> JsonString {
        match String::from_utf16(&units) {
            Ok(text) => JsonString {
                text: Cow::Owned(text),
                ill_formed: None,
            },
            Err(_) => JsonString {
                text: Cow::Owned(String::from_utf16_lossy(&units)),
                ill_formed: Some(units.into_boxed_slice()),
            },
        }
    }

    /// The text; an unpaired surrogate reads as U+FFFD (check [`Self::is_well_formed`]).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The exact UTF-16 code units when the string holds an unpaired surrogate.
    pub fn ill_formed_units(&self) -> Option<&[u16]> {
        self.ill_formed.as_deref()
    }

    /// False when the string holds an unpaired surrogate, which JCS must reject (§2).
    pub fn is_well_formed(&self) -> bool {
        self.ill_formed.is_none()
    }
}

impl PartialEq for JsonString {
    fn eq(&self, other: &Self) -> bool {
        match (&self.ill_formed, &other.ill_formed) {
            (None, None) => self.text == other.text,
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }
}

impl From<String> for JsonString {
    fn from(text: String) -> Self {
        JsonString {
            text: Cow::Owned(text),
            ill_formed: None,
        }
    }
}

impl From<&'static str> for JsonString {
    fn from(text: &'static str) -> Self {
        JsonString {
            text: Cow::Borrowed(text),
            ill_formed: None,
        }
    }
}

impl fmt::Display for JsonString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A JSON object with its members in wire order; names are unique (the parser guarantees it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object {
    members: Vec<(JsonString, Value)>,
}

/// An Object from `(name, value)` members, in that order (a later duplicate name replaces the
/// earlier value, as [`Object::insert`] does): `[("a", v), ("b", w)].into_iter().collect()`.
impl<K: Into<JsonString>> FromIterator<(K, Value)> for Object {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(members: I) -> Object {
        let mut o = Object::new();
        for (k, v) in members {
            o.insert(k, v);
        }
        o
    }
}

impl Object {
    pub fn new() -> Object {
        Object::default()
    }

    /// An empty object with room for `members` members (no regrowth while it is filled; only a
    /// saving: an object without the room behaves the same).
    pub fn with_capacity(members: usize) -> Object {
        Object {
            members: Vec::with_capacity(members),
        }
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.members
            .iter()
            .find(|(k, _)| k.is_well_formed() && k.as_str() == name)
            .map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        self.members
            .iter_mut()
            .find(|(k, _)| k.is_well_formed() && k.as_str() == name)
            .map(|(_, v)| v)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&JsonString, &Value)> {
        self.members.iter().map(|(k, v)| (k, v))
    }

    /// Inserts or replaces a member (replacement keeps the original position).
    pub fn insert(&mut self, name: impl Into<JsonString>, value: Value) {
        let name = name.into();
        if let Some(slot) = self.members.iter_mut().find(|(k, _)| *k == name) {
            slot.1 = value;
        } else {
            self.members.push((name, value));
        }
    }

    /// Inserts a new member at its JCS position, for an object whose members are already in
    /// JCS order (e.g. after [`crate::json::sort_canonical`]); replaces an existing one in place.
    pub fn insert_canonical(&mut self, name: &str, value: Value) {
        if let Some(slot) = self.get_mut(name) {
            *slot = value;
            return;
        }
        let at = self
            .members
            .partition_point(|(k, _)| utf16_cmp(k.as_str(), name) == std::cmp::Ordering::Less);
        self.members
            .insert(at, (JsonString::from(name.to_owned()), value));
    }

    pub fn remove(&mut self, name: &str) -> Option<Value> {
        let idx = self
            .members
            .iter()
            .position(|(k, _)| k.is_well_formed() && k.as_str() == name)?;
        Some(self.members.remove(idx).1)
    }

    /// The members in order, for the JCS writer (it sorts positions, not copies).
    pub(crate) fn members(&self) -> &[(JsonString, Value)] {
        &self.members
    }

    /// The members in order; a slice, so names can be reordered but never added (uniqueness).
    pub(crate) fn members_mut(&mut self) -> &mut [(JsonString, Value)] {
        &mut self.members
    }

    /// Wraps members whose names the parser has already checked for uniqueness.
    pub(crate) fn from_unique(members: Vec<(JsonString, Value)>) -> Object {
        Object { members }
    }
}

#[cfg(test)]
mod pointer_tests {
    use crate::json::{Value, parse_str};

    fn as_u64(v: &Value) -> Option<u64> {
        match v {
            Value::Number(n) => n.as_safe_u64(),
            _ => None,
        }
    }

    #[test]
    fn pointer_unescapes_only_tilde_sequences() {
        let v = parse_str(r#"{"a/b":{"m~n":[10,{"x":"y"}]},"a":{"b":1},"~1":2}"#).unwrap();
        assert_eq!(v.pointer("/a~1b/m~0n/0").and_then(as_u64), Some(10));
        assert_eq!(
            v.pointer("/a~1b/m~0n/1/x").and_then(|s| s.as_str()),
            Some("y")
        );
        // `~1` names the member "a/b", never the path a → b; `~01` is "~1", not "/".
        assert_eq!(v.pointer("/a/b").and_then(as_u64), Some(1));
        assert_eq!(v.pointer("/~01").and_then(as_u64), Some(2));
        assert!(v.pointer("/a~1b/mn").is_none());
        assert!(v.pointer("/a~1b/m~0n/2").is_none());
        assert!(v.pointer("a").is_none());
        assert_eq!(v.pointer(""), Some(&v));
    }
}

#[cfg(test)]
mod tests {
    use super::{Object, Value};
    use crate::json::{parse, to_string};

    #[test]
    fn an_object_collected_from_members_keeps_their_order_and_the_last_duplicate() {
        let o: Object = [
            ("b", Value::from(1u64)),
            ("a", Value::from(2u64)),
            ("b", Value::from(3u64)),
        ]
        .into_iter()
        .collect();
        assert_eq!(to_string(&Value::Object(o)), r#"{"b":3,"a":2}"#);
        let empty: Object = std::iter::empty::<(&'static str, Value)>().collect();
        assert!(empty.is_empty());
    }

    #[test]
    fn each_value_names_its_json_schema_type() {
        let names: Vec<&str> = ["null", "true", "1", "1.5", "\"s\"", "[]", "{}"]
            .iter()
            .map(|t| parse(t.as_bytes()).expect("json").type_name())
            .collect();
        assert_eq!(
            names,
            [
                "null", "boolean", "integer", "number", "string", "array", "object"
            ]
        );
    }

    #[test]
    fn a_signed_integer_keeps_its_value_on_both_sides_of_zero() {
        for n in [-9_007_199_254_740_991i64, -1, 0, 1, 42] {
            assert_eq!(to_string(&Value::from(n)), n.to_string());
        }
        assert_eq!(Value::from(7i64), Value::from(7u64));
    }

    #[test]
    fn an_object_counts_finds_and_inserts_in_canonical_order() {
        let mut o = Object::with_capacity(4);
        assert!(o.is_empty());
        assert_eq!(o.len(), 0);
        o.insert_canonical("b", Value::from(1u64));
        o.insert_canonical("a", Value::from(2u64));
        o.insert_canonical("c", Value::from(3u64));
        assert!(!o.is_empty());
        assert_eq!(o.len(), 3);
        let names: Vec<&str> = o.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        // An existing member is replaced in place, not added.
        o.insert_canonical("b", Value::from(9u64));
        assert_eq!(o.len(), 3);
        assert_eq!(o.get("b"), Some(&Value::from(9u64)));
        // get_mut finds the member by name and only it.
        if let Some(v) = o.get_mut("c") {
            *v = Value::from(4u64);
        }
        assert_eq!(o.get("c"), Some(&Value::from(4u64)));
        assert_eq!(o.get("a"), Some(&Value::from(2u64)));
        assert!(o.get_mut("d").is_none());
        // A name with an unpaired surrogate is not the name its lossy text reads as.
        let Value::Object(mut odd) = parse(br#"{"\ud800":1}"#).expect("json") else {
            panic!("an object");
        };
        assert!(odd.get_mut("\u{FFFD}").is_none());
        assert_eq!(odd.len(), 1);
    }
}

/// RFC 8785 §3.2.3: member names sort by their UTF-16 code units, not by UTF-8 bytes or
/// scalar values (they differ above U+FFFF versus U+E000..U+FFFF).
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let Some(i) = a.iter().zip(b).position(|(x, y)| x != y) else {
        return a.len().cmp(&b.len());
    };
    // UTF-8 byte order is scalar order, which is UTF-16 order except that U+E000..U+FFFF
    // (lead bytes 0xEE, 0xEF) sort after U+10000.. (lead 0xF0..), whose high surrogates are
    // 0xD800..0xDBFF. A mismatch inside a character is between continuation bytes: no fix-up.
    match (a[i], b[i]) {
        (0xEE | 0xEF, 0xF0..) => Ordering::Greater,
        (0xF0.., 0xEE | 0xEF) => Ordering::Less,
        (x, y) => x.cmp(&y),
    }
}

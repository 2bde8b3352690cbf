//! Schema primitives of `common.schema.json` (checklist D-10..D-16) and generic containers.

use super::{Cx, FromJson, SchemaError, ToJson};
use crate::encoding::is_sha256_hash;
use crate::json::{Number, Object, Value};
use crate::time::Timestamp;

macro_rules! string_newtype {
    ($(#[$m:meta])* $name:ident, |$s:ident, $cx:ident| $check:expr) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromJson for $name {
            fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
                let $s = cx.string(v)?;
                let $cx = &*cx;
                let r: Result<(), SchemaError> = $check;
                r?;
                Ok($name($s.to_owned()))
            }
        }

        impl ToJson for $name {
            fn to_json(&self) -> Value {
                Value::string(self.0.clone())
            }
        }
    };
}

string_newtype!(
    /// `common#/$defs/id`: an absolute RFC 3986 URI of at most 512 characters (D-10, D-11).
    Id,
    |s, cx| crate::id::check_id(s).map_err(|e| cx.err(format!("{s:?}: {e}")))
);

string_newtype!(
    /// `common#/$defs/base64url`: the schema pattern and length 2-4096. Canonical decoding
    /// (zero pad bits) is checked later, at the stage that uses the bytes (D-13).
    Base64Url,
    |s, cx| {
        let n = s.len();
        if !(2..=4096).contains(&n) {
            Err(cx.err(format!("base64url length {n} is outside 2..=4096")))
        } else if !s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_') {
            Err(cx.err("not unpadded base64url (pattern ^[A-Za-z0-9_-]+$)"))
        } else {
            Ok(())
        }
    }
);

string_newtype!(
    /// `common#/$defs/sha256`: `sha256:` and 64 lower-case hex digits (D-14).
    Sha256Hash,
    |s, cx| if is_sha256_hash(s) {
        Ok(())
    } else {
        Err(cx.err(format!("{s:?} is not sha256:<64 lower-case hex>")))
    }
);

string_newtype!(
    /// `common#/$defs/kind`: dotted lower-case kind names, at most 160 characters.
    Kind,
    |s, cx| if is_kind(s) {
        Ok(())
    } else {
        Err(cx.err(format!("{s:?} is not a dotted kind name")))
    }
);

string_newtype!(
    /// `common#/$defs/semver`.
    Semver,
    |s, cx| if is_semver(s) {
        Ok(())
    } else {
        Err(cx.err(format!("{s:?} is not a semantic version")))
    }
);

string_newtype!(
    /// `common#/$defs/duration`: the ISO 8601 subset `P[nD][T[nH][nM][n[.n]S]]`.
    Duration,
    |s, cx| if is_duration(s) {
        Ok(())
    } else {
        Err(cx.err(format!("{s:?} is not a duration")))
    }
);

string_newtype!(
    /// `capabilityRef.id`: `^[a-z0-9]+(?:[.-][a-z0-9]+)+$`, at most 200 characters.
    CapabilityId,
    |s, cx| if is_capability_id(s) {
        Ok(())
    } else {
        Err(cx.err(format!("{s:?} is not a capability id")))
    }
);

string_newtype!(
    /// An `ext.` kind: `^ext\.[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*){2,}$`, at most 160.
    ExtKind,
    |s, cx| if is_ext_kind(s) {
        Ok(())
    } else {
        Err(cx.err(format!("{s:?} is not an ext.<organization>.<profile>.<name> kind")))
    }
);

/// A string with `minLength`/`maxLength` in Unicode code points (JSON Schema counts characters).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Str<const MIN: usize, const MAX: usize>(pub String);

impl<const MIN: usize, const MAX: usize> Str<MIN, MAX> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<const MIN: usize, const MAX: usize> FromJson for Str<MIN, MAX> {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        bounded_string(v, cx, MIN, MAX).map(Str)
    }
}

/// [`Str`]'s check, out of line: one copy for every `MIN`/`MAX` pair.
#[inline(never)]
fn bounded_string(v: &Value, cx: &Cx, min: usize, max: usize) -> Result<String, SchemaError> {
    let s = cx.string(v)?;
    let n = s.chars().count();
    if n < min || n > max {
        return Err(cx.err(format!("string length {n} is outside {min}..={max}")));
    }
    Ok(s.to_owned())
}

impl<const MIN: usize, const MAX: usize> ToJson for Str<MIN, MAX> {
    fn to_json(&self) -> Value {
        Value::string(self.0.clone())
    }
}

impl FromJson for String {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        Ok(cx.string(v)?.to_owned())
    }
}

impl ToJson for String {
    fn to_json(&self) -> Value {
        Value::string(self.clone())
    }
}

impl FromJson for bool {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        match v {
            Value::Bool(b) => Ok(*b),
            other => Err(cx.err(format!("expected a boolean, found {}", other.type_name()))),
        }
    }
}

impl ToJson for bool {
    fn to_json(&self) -> Value {
        Value::Bool(*self)
    }
}

/// Any JSON value (`{}` in the schema, e.g. `extensions.*.data`).
impl FromJson for Value {
    fn from_json(v: &Value, _cx: &mut Cx) -> Result<Self, SchemaError> {
        Ok(v.clone())
    }
}

impl ToJson for Value {
    fn to_json(&self) -> Value {
        self.clone()
    }
}

/// An open object (`{"type": "object"}`: `payload`, `details`, `constraints`…).
impl FromJson for Object {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        Ok(cx.object(v)?.clone())
    }
}

impl ToJson for Object {
    fn to_json(&self) -> Value {
        Value::Object(self.clone())
    }
}

/// `common#/$defs/timestamp`: RFC 3339 `date-time`, plus the §2 profile when the context asks
/// for it (inside Signed Documents: a profile failure there is a stage-2 failure, D-9).
impl FromJson for Timestamp {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let s = cx.string(v)?;
        let t = Timestamp::parse_rfc3339(s).map_err(|e| cx.err(format!("{s:?}: {e}")))?;
        if cx.timestamp_profile {
            t.check_profile()
                .map_err(|e| cx.err(format!("{s:?}: {e}")))?;
        }
        Ok(t)
    }
}

impl ToJson for Timestamp {
    fn to_json(&self) -> Value {
        Value::string(self.as_str().to_owned())
    }
}

/// `common#/$defs/safeInteger`: 0 ..= 2^53 - 1 (D-15).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SafeInt(pub u64);

/// `common#/$defs/positiveInteger`: 1 ..= 2^53 - 1 (D-15).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PosInt(pub u64);

fn integer(v: &Value, cx: &Cx, min: u64) -> Result<u64, SchemaError> {
    let n = cx.number(v)?;
    if !n.is_integer() {
        return Err(cx.err(format!("{} is not an integer", n.as_lexical())));
    }
    match n.as_safe_u64() {
        Some(x) if x >= min => Ok(x),
        _ => Err(cx.err(format!(
            "{} is outside {min}..=9007199254740991",
            n.as_lexical()
        ))),
    }
}

impl FromJson for SafeInt {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        integer(v, cx, 0).map(SafeInt)
    }
}

impl ToJson for SafeInt {
    fn to_json(&self) -> Value {
        Value::Number(Number::from_u64(self.0))
    }
}

impl FromJson for PosInt {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        integer(v, cx, 1).map(PosInt)
    }
}

impl ToJson for PosInt {
    fn to_json(&self) -> Value {
        Value::Number(Number::from_u64(self.0))
    }
}

/// A finite number with `minimum: 0` (e.g. `financialLimit`), kept with its spelling.
#[derive(Clone, Debug, PartialEq)]
pub struct NonNegNumber(pub Number);

impl NonNegNumber {
    pub fn value(&self) -> f64 {
        self.0.to_f64()
    }
}

impl FromJson for NonNegNumber {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let n = cx.number(v)?;
        // A non-finite literal is left to the JCS stage where it is a stage-5 failure.
        if n.to_f64() < 0.0 {
            return Err(cx.err(format!("{} is below the minimum 0", n.as_lexical())));
        }
        Ok(NonNegNumber(n.clone()))
    }
}

impl ToJson for NonNegNumber {
    fn to_json(&self) -> Value {
        Value::Number(self.0.clone())
    }
}

/// An array with `minItems` `MIN`, `maxItems` `MAX` and, if `UNIQUE`, `uniqueItems: true`.
#[derive(Clone, Debug, PartialEq)]
pub struct Array<
    T,
    const MIN: usize = 0,
    const MAX: usize = { usize::MAX },
    const UNIQUE: bool = false,
>(pub Vec<T>);

/// `minItems: 1`.
pub type NonEmpty<T> = Array<T, 1>;
/// `minItems: 1, uniqueItems: true`.
pub type NonEmptyUnique<T> = Array<T, 1, { usize::MAX }, true>;
/// `uniqueItems: true`.
pub type Unique<T> = Array<T, 0, { usize::MAX }, true>;

impl<T, const MIN: usize, const MAX: usize, const UNIQUE: bool> Array<T, MIN, MAX, UNIQUE> {
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<T: FromJson + ToJson, const MIN: usize, const MAX: usize, const UNIQUE: bool> FromJson
    for Array<T, MIN, MAX, UNIQUE>
{
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let items = array_items(v, cx, MIN, MAX, UNIQUE)?;
        parse_items(items, cx).map(Array)
    }
}

/// An array's `minItems`/`maxItems`/`uniqueItems` checks, out of line: one copy for every
/// item type and bound (the bounds are const generics of [`Array`]).
#[inline(never)]
fn array_items<'v>(
    v: &'v Value,
    cx: &Cx,
    min: usize,
    max: usize,
    unique: bool,
) -> Result<&'v [Value], SchemaError> {
    let items = match v {
        Value::Array(a) => a,
        other => {
            return Err(cx.err(format!("expected an array, found {}", other.type_name())));
        }
    };
    if items.len() < min {
        return Err(cx.err(format!(
            "array has {} items, at least {min} required",
            items.len()
        )));
    }
    if items.len() > max {
        return Err(cx.err(format!(
            "array has {} items, at most {max} allowed",
            items.len()
        )));
    }
    if unique {
        for (i, a) in items.iter().enumerate() {
            if items[..i].iter().any(|b| json_equal(a, b)) {
                return Err(cx.err(format!("item {i} repeats an earlier item (uniqueItems)")));
            }
        }
    }
    Ok(items)
}

/// Parses every item as `T`, at its index; one instance per item type whatever the bounds.
fn parse_items<T: FromJson>(items: &[Value], cx: &mut Cx) -> Result<Vec<T>, SchemaError> {
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        out.push(cx.at(i, |cx| T::from_json(item, cx))?);
    }
    Ok(out)
}

impl<T: ToJson, const MIN: usize, const MAX: usize, const UNIQUE: bool> ToJson
    for Array<T, MIN, MAX, UNIQUE>
{
    fn to_json(&self) -> Value {
        Value::Array(self.0.iter().map(ToJson::to_json).collect())
    }
}

impl<T: FromJson> FromJson for Vec<T> {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let items = array_items(v, cx, 0, usize::MAX, false)?;
        parse_items(items, cx)
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn to_json(&self) -> Value {
        Value::Array(self.iter().map(ToJson::to_json).collect())
    }
}

/// JSON Schema equality: numbers by value, objects regardless of member order.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.to_f64() == y.to_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.iter()
                        .find(|(k2, _)| *k2 == k)
                        .is_some_and(|(_, v2)| json_equal(v, v2))
                })
        }
        _ => a == b,
    }
}

/// A `const` string such as `protocolVersion: "0.1"`.
#[macro_export]
macro_rules! const_str {
    ($(#[$m:meta])* $name:ident = $wire:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            pub const WIRE: &'static str = $wire;
        }

        impl $crate::model::FromJson for $name {
            fn from_json(
                v: &$crate::json::Value,
                cx: &mut $crate::model::Cx,
            ) -> Result<Self, $crate::model::SchemaError> {
                cx.const_string(v, $wire).map(|()| $name)
            }
        }

        impl $crate::model::ToJson for $name {
            fn to_json(&self) -> $crate::json::Value {
                $crate::json::Value::string($wire)
            }
        }
    };
}

fn is_lower_ident(seg: &str, first: impl Fn(u8) -> bool, rest: impl Fn(u8) -> bool) -> bool {
    let b = seg.as_bytes();
    !b.is_empty() && first(b[0]) && b[1..].iter().all(|&c| rest(c))
}

/// `^[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+$`, at most 160 characters.
pub fn is_kind(s: &str) -> bool {
    s.len() <= 160
        && s.split('.').count() >= 2
        && s.split('.').all(|seg| {
            is_lower_ident(
                seg,
                |c| c.is_ascii_lowercase(),
                |c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_',
            )
        })
}

/// `^ext\.[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*){2,}$`, at most 160 characters.
pub fn is_ext_kind(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("ext.") else {
        return false;
    };
    s.len() <= 160
        && rest.split('.').count() >= 3
        && rest.split('.').all(|seg| {
            is_lower_ident(
                seg,
                |c| c.is_ascii_lowercase() || c.is_ascii_digit(),
                |c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-',
            )
        })
}

/// `^[a-z0-9]+(?:[.-][a-z0-9]+)+$`, at most 200 characters.
pub fn is_capability_id(s: &str) -> bool {
    if s.len() > 200 {
        return false;
    }
    let parts: Vec<&str> = s.split(['.', '-']).collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

fn is_numeric_identifier(p: &str) -> bool {
    !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()) && (p == "0" || !p.starts_with('0'))
}

fn is_dotted_alnum(p: &str) -> bool {
    !p.is_empty()
        && p.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'-')
}

/// The schema's semver pattern: `MAJOR.MINOR.PATCH[-pre][+build]`, at most 128 characters.
pub fn is_semver(s: &str) -> bool {
    if s.len() > 128 {
        return false;
    }
    let (rest, build) = match s.split_once('+') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    if build.is_some_and(|b| !is_dotted_alnum(b)) {
        return false;
    }
    let (core, pre) = match rest.split_once('-') {
        Some((a, b)) => (a, Some(b)),
        None => (rest, None),
    };
    if pre.is_some_and(|p| !is_dotted_alnum(p)) {
        return false;
    }
    let nums: Vec<&str> = core.split('.').collect();
    nums.len() == 3 && nums.iter().all(|n| is_numeric_identifier(n))
}

/// `^P(?!$)(?:[0-9]+D)?(?:T(?=[0-9])(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+(?:\.[0-9]+)?S)?)?$`.
pub fn is_duration(s: &str) -> bool {
    if s.len() > 64 {
        return false;
    }
    let Some(rest) = s.strip_prefix('P') else {
        return false;
    };
    if rest.is_empty() {
        return false;
    }
    let b = rest.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    // Optional nD.
    let save = i;
    if digits(&mut i) {
        if b.get(i) == Some(&b'D') {
            i += 1;
        } else {
            return false;
        }
    } else {
        i = save;
    }
    if i == b.len() {
        return true;
    }
    if b.get(i) != Some(&b'T') {
        return false;
    }
    i += 1;
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    // Units must appear in H, M, S order, each at most once.
    let mut order = 0;
    while i < b.len() {
        if !digits(&mut i) {
            return false;
        }
        let mut fractional = false;
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !digits(&mut i) {
                return false;
            }
            fractional = true;
        }
        let unit = match b.get(i) {
            Some(b'H') if !fractional => 1,
            Some(b'M') if !fractional => 2,
            Some(b'S') => 3,
            _ => return false,
        };
        if unit <= order {
            return false;
        }
        order = unit;
        i += 1;
    }
    true
}

string_newtype!(
    /// A bare `format: uri` (an absolute RFC 3986 URI) without the 512-character limit of
    /// `common#/$defs/id`, e.g. `message` `data_ref.schema` and a deliverable's `schema`.
    Uri,
    |s, cx| if crate::id::is_absolute_uri(s) {
        Ok(())
    } else {
        Err(cx.err(format!("{s:?} is not an absolute RFC 3986 URI (format: uri)")))
    }
);

/// An `if … then: {required: [name]}` rule: when `condition` holds, member `name` must be
/// present. The error is reported at the object and names `rule`.
pub fn require_if(
    cx: &Cx,
    condition: bool,
    present: bool,
    name: &str,
    rule: &str,
) -> Result<(), SchemaError> {
    if condition && !present {
        Err(cx.err(format!("missing member \"{name}\", required by {rule}")))
    } else {
        Ok(())
    }
}

/// An `if … then: {not: {required: [name]}}` rule: when `condition` holds, member `name` must
/// be absent. The error is reported at the member and names `rule`.
pub fn forbid_if(
    cx: &mut Cx,
    condition: bool,
    present: bool,
    name: &str,
    rule: &str,
) -> Result<(), SchemaError> {
    if condition && present {
        cx.at(name.to_owned(), |cx| {
            Err(cx.err(format!("member \"{name}\" is forbidden by {rule}")))
        })
    } else {
        Ok(())
    }
}

/// Test support: the shared protocol bundle (`MWP_PROTOCOL_DIR`) and its conformance manifest.
/// A nullable member written out as `null` when absent (the authority's projections always
/// carry every member, payloads.md §2.5): `null` reads as `None`.
impl<T: FromJson> FromJson for Option<T> {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        match v {
            Value::Null => Ok(None),
            other => T::from_json(other, cx).map(Some),
        }
    }
}

impl<T: ToJson> ToJson for Option<T> {
    fn to_json(&self) -> Value {
        match self {
            Some(v) => v.to_json(),
            None => Value::Null,
        }
    }
}

/// A non-negative safe integer as a plain `u64` (counters and epochs inside projections).
impl FromJson for u64 {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        integer(v, cx, 0)
    }
}

impl ToJson for u64 {
    fn to_json(&self) -> Value {
        Value::Number(Number::from_u64(*self))
    }
}

/// A JSON object mapping names to values of one type, in name order.
impl<T: FromJson> FromJson for std::collections::BTreeMap<String, T> {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError> {
        let obj = cx.object(v)?;
        let mut out = std::collections::BTreeMap::new();
        for (k, val) in obj.iter() {
            out.insert(
                k.as_str().to_owned(),
                cx.field::<T>(k.as_str().to_owned(), val)?,
            );
        }
        Ok(out)
    }
}

impl<T: ToJson> ToJson for std::collections::BTreeMap<String, T> {
    fn to_json(&self) -> Value {
        let mut o = Object::new();
        for (k, v) in self {
            o.insert(k.to_owned(), v.to_json());
        }
        Value::Object(o)
    }
}

#[cfg(test)]
pub(crate) mod testkit {
    use crate::json::{Object, Value};
    use std::path::PathBuf;

    /// The protocol bundle directory.
    pub fn protocol_dir() -> PathBuf {
        match std::env::var("MWP_PROTOCOL_DIR") {
            Ok(d) if !d.is_empty() => PathBuf::from(d),
            _ => PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/protocol"
            )),
        }
    }

    /// Reads a bundle file (path relative to the bundle root) as raw bytes.
    pub fn read(rel: &str) -> Vec<u8> {
        let p = protocol_dir().join(rel);
        std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
    }

    /// Reads and strictly parses a bundle JSON file.
    pub fn load(rel: &str) -> Value {
        crate::json::parse(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// One structural case of `conformance/manifest.json`.
    pub struct Case {
        pub name: String,
        pub instance: String,
        pub valid: bool,
    }

    /// The manifest cases for `schemas/<schema_file>`.
    pub fn cases(schema_file: &str) -> Vec<Case> {
        let m = load("conformance/manifest.json");
        let Value::Array(items) = m else {
            panic!("manifest is not an array")
        };
        let want = format!("schemas/{schema_file}");
        let s = |o: &Object, k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        items
            .iter()
            .filter_map(Value::as_object)
            .filter(|o| s(o, "schema") == want)
            .map(|o| Case {
                name: s(o, "name"),
                instance: s(o, "instance"),
                valid: o.get("valid") == Some(&Value::Bool(true)),
            })
            .collect()
    }

    /// The instance of the manifest case whose instance path ends with `suffix`.
    pub fn vector(schema_file: &str, suffix: &str) -> Value {
        let case = cases(schema_file)
            .into_iter()
            .find(|c| c.instance.ends_with(suffix))
            .unwrap_or_else(|| panic!("no manifest case {suffix} for {schema_file}"));
        load(&case.instance)
    }

    /// A copy of `v` with `f` applied to the object at `path` (member names or array indexes).
    pub fn edit(v: &Value, path: &[&str], f: impl FnOnce(&mut Object)) -> Value {
        let mut out = v.clone();
        let mut f = Some(f);
        edit_in(&mut out, path, &mut |o| {
            if let Some(f) = f.take() {
                f(o)
            }
        });
        out
    }

    fn edit_in(v: &mut Value, path: &[&str], f: &mut dyn FnMut(&mut Object)) {
        match (path.split_first(), v) {
            (None, Value::Object(o)) => f(o),
            (Some((seg, rest)), Value::Object(o)) => {
                let mut child = o
                    .get(seg)
                    .cloned()
                    .unwrap_or_else(|| panic!("no member {seg}"));
                edit_in(&mut child, rest, f);
                o.insert(seg.to_string(), child);
            }
            (Some((seg, rest)), Value::Array(a)) => {
                let i: usize = seg.parse().unwrap_or_else(|_| panic!("bad index {seg}"));
                let child = a.get_mut(i).unwrap_or_else(|| panic!("no item {i}"));
                edit_in(child, rest, f);
            }
            _ => panic!("path {path:?} does not lead to an object"),
        }
    }

    /// A copy of `v` with `f` applied to its root object.
    pub fn mutate(v: &Value, f: impl FnOnce(&mut Object)) -> Value {
        edit(v, &[], f)
    }

    /// Asserts that `r` failed at JSON Pointer `pointer` with a message containing `needle`.
    pub fn assert_fails<T: std::fmt::Debug>(
        r: Result<T, crate::model::SchemaError>,
        pointer: &str,
        needle: &str,
    ) {
        match r {
            Ok(v) => panic!("expected a failure at {pointer:?} ({needle}), parsed {v:?}"),
            Err(e) => {
                assert_eq!(e.pointer, pointer, "wrong pointer for {e}");
                assert!(
                    e.message.contains(needle),
                    "{e} does not mention {needle:?}"
                );
            }
        }
    }

    /// One axis of [`agree_on_matrix`]: member `name` of the object at `path`, set to each
    /// value in turn (`None` removes it).
    pub struct Axis<'a> {
        pub path: &'a [&'a str],
        pub name: &'a str,
        pub values: Vec<Option<Value>>,
    }

    impl<'a> Axis<'a> {
        /// Each value, never absent.
        pub fn values(path: &'a [&'a str], name: &'a str, values: &[&str]) -> Axis<'a> {
            Axis {
                path,
                name,
                values: values.iter().map(|v| Some(Value::from(*v))).collect(),
            }
        }

        /// Present with `value`, or absent.
        pub fn optional(path: &'a [&'a str], name: &'a str, value: Value) -> Axis<'a> {
            Axis {
                path,
                name,
                values: vec![None, Some(value)],
            }
        }
    }

    /// Runs `ours` and an independent `reference` validator over the Cartesian product of
    /// `axes` applied to `base`, panicking on the first disagreement. Returns how many
    /// combinations were accepted and rejected.
    pub fn agree_on_matrix(
        base: &Value,
        axes: &[Axis<'_>],
        ours: impl Fn(&Value) -> Result<(), crate::model::SchemaError>,
        reference: impl Fn(&Value) -> bool,
    ) -> (usize, usize) {
        let total: usize = axes.iter().map(|a| a.values.len()).product();
        let (mut accepted, mut rejected) = (0, 0);
        for mut n in 0..total {
            let mut v = base.clone();
            let mut label = Vec::new();
            for a in axes {
                let choice = &a.values[n % a.values.len()];
                n /= a.values.len();
                v = edit(&v, a.path, |o| match choice {
                    Some(x) => o.insert(a.name.to_owned(), x.clone()),
                    None => {
                        o.remove(a.name);
                    }
                });
                label.push(format!(
                    "{}/{}={}",
                    a.path.join("/"),
                    a.name,
                    choice
                        .as_ref()
                        .map_or("<absent>".to_owned(), crate::json::to_string)
                ));
            }
            let r = ours(&v);
            assert_eq!(r.is_ok(), reference(&v), "{}: ours {r:?}", label.join(" "));
            if r.is_ok() {
                accepted += 1;
            } else {
                rejected += 1;
            }
        }
        (accepted, rejected)
    }

    /// Parses a JSON literal (test input written inline).
    pub fn json(text: &str) -> Value {
        crate::json::parse_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }
}

//! Strict JSON parsing: §6.4 stage 1 and §17.4 (checklist D-2).
//!
//! Exactly one RFC 8259 value; invalid UTF-8, a byte-order mark, trailing data, `NaN`/`Infinity`
//! and duplicate member names (compared after escape decoding, at any depth) are rejected.
//! Numbers and strings are kept lossless (see [`super::value`]).

use super::plain_run;
use super::value::{JsonString, Number, Object, Value};
use std::collections::BTreeSet;
use std::fmt;

/// Nesting deeper than this is refused, so hostile input cannot exhaust the stack.
pub const MAX_DEPTH: usize = 128;

/// Why strict parsing failed, with the byte offset where it was detected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub offset: usize,
    pub kind: ParseErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseErrorKind {
    InvalidUtf8,
    ByteOrderMark,
    Empty,
    UnexpectedEnd,
    UnexpectedByte(u8),
    TrailingData,
    DuplicateMember(String),
    InvalidEscape,
    ControlCharacterInString,
    InvalidNumber,
    TooDeep,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ParseErrorKind::InvalidUtf8 => write!(f, "invalid UTF-8 at byte {}", self.offset),
            ParseErrorKind::ByteOrderMark => write!(f, "a byte-order mark is not allowed"),
            ParseErrorKind::Empty => write!(f, "no JSON value"),
            ParseErrorKind::UnexpectedEnd => write!(f, "unexpected end of input"),
            ParseErrorKind::UnexpectedByte(b) => {
                write!(f, "unexpected {} at byte {}", describe(*b), self.offset)
            }
            ParseErrorKind::TrailingData => {
                write!(
                    f,
                    "trailing data after the JSON value at byte {}",
                    self.offset
                )
            }
            ParseErrorKind::DuplicateMember(name) => {
                write!(
                    f,
                    "duplicate object member {name:?} at byte {}",
                    self.offset
                )
            }
            ParseErrorKind::InvalidEscape => {
                write!(f, "invalid string escape at byte {}", self.offset)
            }
            ParseErrorKind::ControlCharacterInString => {
                write!(
                    f,
                    "unescaped control character in string at byte {}",
                    self.offset
                )
            }
            ParseErrorKind::InvalidNumber => write!(f, "invalid number at byte {}", self.offset),
            ParseErrorKind::TooDeep => {
                write!(f, "nesting deeper than {MAX_DEPTH} at byte {}", self.offset)
            }
        }
    }
}

impl std::error::Error for ParseError {}

fn describe(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// Parses exactly one JSON value from `bytes` (D-2).
pub fn parse(bytes: &[u8]) -> Result<Value, ParseError> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(ParseError {
            offset: 0,
            kind: ParseErrorKind::ByteOrderMark,
        });
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            return Err(ParseError {
                offset: e.valid_up_to(),
                kind: ParseErrorKind::InvalidUtf8,
            });
        }
    };
    let mut p = Parser {
        s: text,
        i: 0,
        members: Vec::new(),
        items: Vec::new(),
    };
    p.ws();
    if p.i == bytes.len() {
        return Err(p.err(ParseErrorKind::Empty));
    }
    let v = p.value(0)?;
    p.ws();
    if p.i != bytes.len() {
        return Err(p.err(ParseErrorKind::TrailingData));
    }
    Ok(v)
}

/// Parses a `&str` (already UTF-8) strictly.
pub fn parse_str(text: &str) -> Result<Value, ParseError> {
    parse(text.as_bytes())
}

/// Up to this many members a duplicate name is found by scanning the members already parsed
/// (no allocation); past it, through ordered sets, so a hostile object stays O(n log n).
const LINEAR_NAMES: usize = 16;

/// Member names of a large object; well-formed names compare by text, ill-formed ones by code
/// units, exactly as `JsonString`'s equality.
#[derive(Default)]
struct NameSet {
    text: BTreeSet<String>,
    units: BTreeSet<Box<[u16]>>,
}

impl NameSet {
    /// False when the name was already there.
    fn insert(&mut self, name: &JsonString) -> bool {
        match name.ill_formed_units() {
            None => self.text.insert(name.as_str().to_owned()),
            Some(units) => self.units.insert(units.into()),
        }
    }
}

struct Parser<'a> {
    /// The whole input, already validated as UTF-8: string and number text is sliced out of it
    /// at ASCII delimiters, never validated again.
    s: &'a str,
    i: usize,
    /// Members of the objects being parsed, innermost last: each object takes its own off the
    /// top in one exact allocation when it closes, instead of growing a vector per object.
    members: Vec<(JsonString, Value)>,
    /// The same for array items.
    items: Vec<Value>,
}

impl<'a> Parser<'a> {
    fn err(&self, kind: ParseErrorKind) -> ParseError {
        ParseError {
            offset: self.i,
            kind,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.s.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.i).copied()
    }

    /// The input from `start` to the cursor; both are at ASCII delimiters, so the slice is
    /// always on character boundaries (the error is unreachable, but no input can panic here).
    fn text_from(&self, start: usize) -> Result<&'a str, ParseError> {
        self.s.get(start..self.i).ok_or(ParseError {
            offset: start,
            kind: ParseErrorKind::InvalidUtf8,
        })
    }

    /// The input after the cursor.
    fn rest(&self) -> &'a [u8] {
        self.bytes().get(self.i..).unwrap_or_default()
    }

    /// Moves the cursor past bytes that a string holds verbatim.
    fn skip_plain(&mut self) {
        self.i += plain_run(self.rest());
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), ParseError> {
        match self.peek() {
            Some(b) if b == byte => {
                self.i += 1;
                Ok(())
            }
            Some(b) => Err(self.err(ParseErrorKind::UnexpectedByte(b))),
            None => Err(self.err(ParseErrorKind::UnexpectedEnd)),
        }
    }

    fn literal(&mut self, word: &[u8], v: Value) -> Result<Value, ParseError> {
        if self.rest().starts_with(word) {
            self.i += word.len();
            return Ok(v);
        }
        // Byte by byte only to report where it went wrong.
        for &c in word {
            self.expect(c)?;
        }
        Ok(v)
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        match self.peek() {
            None => Err(self.err(ParseErrorKind::UnexpectedEnd)),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b) => Err(self.err(ParseErrorKind::UnexpectedByte(b))),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        // (`>` and `==` agree: depth grows by one per level and every level is checked.)
        if depth > MAX_DEPTH {
            return Err(self.err(ParseErrorKind::TooDeep));
        }
        self.i += 1; // '{'
        let base = self.members.len();
        // On error the whole parse is abandoned, so the stack needs no cleanup.
        self.object_members(base, depth)?;
        let members: Vec<_> = self.members.drain(base..).collect();
        Ok(Value::Object(Object::from_unique(members)))
    }

    /// Parses the members of an object onto `self.members` above `base`.
    fn object_members(&mut self, base: usize, depth: usize) -> Result<(), ParseError> {
        let mut names: Option<NameSet> = None;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            let at = self.i;
            if self.peek() != Some(b'"') {
                return Err(match self.peek() {
                    Some(b) => self.err(ParseErrorKind::UnexpectedByte(b)),
                    None => self.err(ParseErrorKind::UnexpectedEnd),
                });
            }
            let name = self.member_name()?;
            let duplicate = match &mut names {
                Some(set) => !set.insert(&name),
                None if self.members[base..].iter().any(|(k, _)| *k == name) => true,
                None => {
                    // (Only when to build the set: the surviving mutants of this test (`>= → <`,
                    // `- → +`) build it sooner or never, and duplicates are found either way.)
                    if self.members.len() - base >= LINEAR_NAMES {
                        let mut set = NameSet::default();
                        for (k, _) in &self.members[base..] {
                            set.insert(k);
                        }
                        set.insert(&name);
                        names = Some(set);
                    }
                    false
                }
            };
            if duplicate {
                return Err(ParseError {
                    offset: at,
                    kind: ParseErrorKind::DuplicateMember(name.as_str().to_owned()),
                });
            }
            self.ws();
            self.expect(b':')?;
            self.ws();
            let v = self.value(depth)?;
            self.members.push((name, v));
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b) => return Err(self.err(ParseErrorKind::UnexpectedByte(b))),
                None => return Err(self.err(ParseErrorKind::UnexpectedEnd)),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err(ParseErrorKind::TooDeep));
        }
        self.i += 1; // '['
        let base = self.items.len();
        self.array_items(depth)?;
        let items: Vec<_> = self.items.drain(base..).collect();
        Ok(Value::Array(items))
    }

    /// Parses the items of an array onto `self.items`.
    fn array_items(&mut self, depth: usize) -> Result<(), ParseError> {
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            let v = self.value(depth)?;
            self.items.push(v);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b) => return Err(self.err(ParseErrorKind::UnexpectedByte(b))),
                None => return Err(self.err(ParseErrorKind::UnexpectedEnd)),
            }
        }
    }

    fn hex4(&mut self) -> Result<u16, ParseError> {
        let mut v: u16 = 0;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                Some(_) => return Err(self.err(ParseErrorKind::InvalidEscape)),
                None => return Err(self.err(ParseErrorKind::UnexpectedEnd)),
            };
            // (`|` or `^`: the low four bits of `v << 4` are zero, so a `| → ^` mutant survives.)
            v = (v << 4) | u16::from(d);
            self.i += 1;
        }
        Ok(v)
    }

    /// The unit of one simple escape (after the backslash and the escape letter were consumed;
    /// `\u` is handled by the callers).
    fn simple_escape(&mut self, e: u8) -> Result<u8, ParseError> {
        Ok(match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0C,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            _ => {
                self.i -= 1;
                return Err(self.err(ParseErrorKind::InvalidEscape));
            }
        })
    }

    /// A member name: the protocol's common names (envelopes, actors, signatures, records) are
    /// returned as borrowed literals, so parsing a Command allocates nothing for them.
    fn member_name(&mut self) -> Result<JsonString, ParseError> {
        // (A fast path: a mutant that looks in the wrong place finds no common name and falls
        // back to `string()`, which reads the same name; the tests hold what it must not take.)
        let start = self.i + 1;
        let run = plain_run(self.bytes().get(start..).unwrap_or_default());
        if self.bytes().get(start + run) == Some(&b'"')
            && let Some(known) = self.s.get(start..start + run).and_then(known_member_name)
        {
            self.i = start + run + 1;
            return Ok(JsonString::from(known));
        }
        self.string()
    }

    /// Reads a string straight into UTF-8, copying unescaped runs whole. A lone surrogate
    /// escape cannot be UTF-8, so the string is then read again by [`Self::string_units`].
    fn string(&mut self) -> Result<JsonString, ParseError> {
        self.i += 1; // opening quote
        let start = self.i;
        self.skip_plain();
        if self.peek() == Some(b'"') {
            let text = self.text_from(start)?.to_owned();
            self.i += 1;
            return Ok(JsonString::from(text));
        }
        let mut text = String::with_capacity(self.i - start + 16);
        text.push_str(self.text_from(start)?);
        loop {
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(JsonString::from(text));
                }
                Some(b'\\') => {
                    self.i += 1;
                    let Some(e) = self.peek() else {
                        return Err(self.err(ParseErrorKind::UnexpectedEnd));
                    };
                    self.i += 1;
                    if e != b'u' {
                        text.push(char::from(self.simple_escape(e)?));
                    } else {
                        let unit = self.hex4()?;
                        // A fast path: without it (or with `low_surrogate` always `None`) a
                        // high surrogate falls back to `string_units`, which decodes the same
                        // pair to the same text (mutants there cannot change behaviour).
                        let scalar = match unit {
                            0xD800..=0xDBFF => match self.low_surrogate()? {
                                Some(low) => {
                                    0x10000
                                        + ((u32::from(unit) - 0xD800) << 10)
                                        + (u32::from(low) - 0xDC00)
                                }
                                None => return self.string_units(start),
                            },
                            _ => u32::from(unit),
                        };
                        match char::from_u32(scalar) {
                            Some(c) => text.push(c),
                            // A low surrogate with no high one before it.
                            None => return self.string_units(start),
                        }
                    }
                }
                Some(_) => return Err(self.err(ParseErrorKind::ControlCharacterInString)),
                None => return Err(self.err(ParseErrorKind::UnexpectedEnd)),
            }
            let run = self.i;
            self.skip_plain();
            text.push_str(self.text_from(run)?);
        }
    }

    /// After a high surrogate escape: consumes a following `\uXXXX` and returns it when it is a
    /// low surrogate; `None` (the high surrogate is unpaired) otherwise.
    fn low_surrogate(&mut self) -> Result<Option<u16>, ParseError> {
        if !self.rest().starts_with(b"\\u") {
            return Ok(None);
        }
        self.i += 2;
        let unit = self.hex4()?;
        Ok((0xDC00..=0xDFFF).contains(&unit).then_some(unit))
    }

    /// Reads the string that starts at `start` (after its quote) into UTF-16 code units, so
    /// unpaired surrogates survive.
    fn string_units(&mut self, start: usize) -> Result<JsonString, ParseError> {
        self.i = start;
        let mut units: Vec<u16> = Vec::new();
        loop {
            let run = self.i;
            self.skip_plain();
            units.extend(self.text_from(run)?.encode_utf16());
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(JsonString::from_utf16_lossless(units));
                }
                Some(b'\\') => {
                    self.i += 1;
                    let Some(e) = self.peek() else {
                        return Err(self.err(ParseErrorKind::UnexpectedEnd));
                    };
                    self.i += 1;
                    let unit = if e == b'u' {
                        self.hex4()?
                    } else {
                        u16::from(self.simple_escape(e)?)
                    };
                    units.push(unit);
                }
                Some(_) => return Err(self.err(ParseErrorKind::ControlCharacterInString)),
                None => return Err(self.err(ParseErrorKind::UnexpectedEnd)),
            }
        }
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.err(ParseErrorKind::InvalidNumber)),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err(ParseErrorKind::InvalidNumber));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err(ParseErrorKind::InvalidNumber));
            }
            self.digits();
        }
        Ok(Value::Number(Number::from_lexical(self.text_from(start)?)))
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }
}

/// The member names that appear in nearly every Command, Event and admission record: a name
/// found here is borrowed instead of allocated. Only a saving: without an arm (or the whole
/// table) the same name is read by `string()` into an owned string equal to it, so mutants
/// that delete arms cannot change behaviour.
fn known_member_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "protocolVersion" => "protocolVersion",
        "actionId" => "actionId",
        "actor" => "actor",
        "type" => "type",
        "id" => "id",
        "kind" => "kind",
        "correlationId" => "correlationId",
        "issuedAt" => "issuedAt",
        "payload" => "payload",
        "signature" => "signature",
        "algorithm" => "algorithm",
        "createdAt" => "createdAt",
        "keyId" => "keyId",
        "value" => "value",
        "groupId" => "groupId",
        "sessionEpoch" => "sessionEpoch",
        "membershipEpoch" => "membershipEpoch",
        "coordinatorEpoch" => "coordinatorEpoch",
        "expectedRevision" => "expectedRevision",
        "conversationId" => "conversationId",
        "workItemId" => "workItemId",
        "missionId" => "missionId",
        "messageId" => "messageId",
        "content" => "content",
        "eventId" => "eventId",
        "sequence" => "sequence",
        "aggregateRevision" => "aggregateRevision",
        "cause" => "cause",
        "occurredAt" => "occurredAt",
        "acceptedBy" => "acceptedBy",
        "commandHash" => "commandHash",
        "extensions" => "extensions",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::parse;

    /// An unexpected byte is named as a person reads it: printable ASCII quoted, anything else
    /// (a control, a space, a UTF-8 lead byte) in hexadecimal.
    #[test]
    fn an_unexpected_byte_is_named_quoted_or_in_hex() {
        let message = |text: &[u8]| parse(text).expect_err("not JSON").to_string();
        assert_eq!(message(b"[1,}"), "unexpected '}' at byte 3");
        assert_eq!(message(b"[\x01]"), "unexpected byte 0x01 at byte 1");
        assert_eq!(message("[é]".as_bytes()), "unexpected byte 0xc3 at byte 1");
    }

    /// A member name that starts like a common one ("actor", "id", "type") but goes on with an
    /// escape or more text is read whole, not taken for the common name.
    #[test]
    fn a_name_that_only_starts_like_a_common_one_is_read_whole() {
        let v =
            parse(br#"{"actor\u0041":1,"id\"x":2,"type\\":3,"kindly":4,"id":5}"#).expect("json");
        let crate::json::Value::Object(o) = v else {
            panic!("an object");
        };
        let names: Vec<&str> = o.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["actorA", "id\"x", "type\\", "kindly", "id"]);
        // Six spaces put a quote at (name start) × (plain run), the byte a mutant once checked.
        let v = parse(br#"{      "id\u0041":1}"#).expect("json");
        assert_eq!(v, parse(br#"{"idA":1}"#).expect("json"));
    }

    /// A surrogate pair written as two escapes is one scalar value: its arithmetic is checked
    /// at the bounds of both halves (a mutated sum or difference gives another, valid, scalar).
    #[test]
    fn a_surrogate_pair_escape_decodes_to_its_scalar_value() {
        for (json, want) in [
            (r#""\uD800\uDC00""#, "\u{10000}"),
            (r#""\uDBFF\uDFFF""#, "\u{10FFFF}"),
            (r#""\ud83d\ude00""#, "\u{1F600}"),
            (r#""a\uD834\uDD1Eb""#, "a\u{1D11E}b"),
        ] {
            let v = parse(json.as_bytes()).expect("json");
            assert_eq!(v.as_str(), Some(want), "{json}");
        }
    }
}

//! Strict JSON parsing: §6.4 stage 1 and §17.4 (checklist D-2).
//!
//! Exactly one RFC 8259 value; invalid UTF-8, a byte-order mark, trailing data, `NaN`/`Infinity`
//! and duplicate member names (compared after escape decoding, at any depth) are rejected.
//! Numbers and strings are kept lossless (see [`super::value`]).

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
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err(ParseError {
            offset: e.valid_up_to(),
            kind: ParseErrorKind::InvalidUtf8,
        });
    }
    let mut p = Parser { b: bytes, i: 0 };
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

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err(&self, kind: ParseErrorKind) -> ParseError {
        ParseError {
            offset: self.i,
            kind,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
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
        if depth > MAX_DEPTH {
            return Err(self.err(ParseErrorKind::TooDeep));
        }
        self.i += 1; // '{'
        let mut obj = Object::new();
        // Decoded names seen so far; ill-formed names are compared by code units.
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut seen_ill: Vec<JsonString> = Vec::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(Value::Object(obj));
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
            let name = self.string()?;
            let duplicate = if name.is_well_formed() {
                !seen.insert(name.as_str().to_owned())
            } else if seen_ill.contains(&name) {
                true
            } else {
                seen_ill.push(name.clone());
                false
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
            obj.push_unchecked(name, v);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(obj));
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
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth)?);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(items));
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
            v = (v << 4) | u16::from(d);
            self.i += 1;
        }
        Ok(v)
    }

    fn string(&mut self) -> Result<JsonString, ParseError> {
        self.i += 1; // opening quote
        let start = self.i;
        // Fast path: no escapes.
        while let Some(c) = self.peek() {
            match c {
                b'"' => {
                    // The input was validated as UTF-8 and we stopped at an ASCII quote, so
                    // this slice is a valid UTF-8 boundary.
                    let s = String::from_utf8_lossy(&self.b[start..self.i]).into_owned();
                    self.i += 1;
                    return Ok(JsonString::from(s));
                }
                b'\\' => break,
                0x00..=0x1F => return Err(self.err(ParseErrorKind::ControlCharacterInString)),
                _ => self.i += 1,
            }
        }
        // Slow path: decode into UTF-16 code units so unpaired surrogates survive.
        let mut units: Vec<u16> = String::from_utf8_lossy(&self.b[start..self.i])
            .encode_utf16()
            .collect();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err(ParseErrorKind::UnexpectedEnd));
            };
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(JsonString::from_utf16_lossless(units));
                }
                b'\\' => {
                    self.i += 1;
                    let Some(e) = self.peek() else {
                        return Err(self.err(ParseErrorKind::UnexpectedEnd));
                    };
                    self.i += 1;
                    let unit = match e {
                        b'"' => 0x22,
                        b'\\' => 0x5C,
                        b'/' => 0x2F,
                        b'b' => 0x08,
                        b'f' => 0x0C,
                        b'n' => 0x0A,
                        b'r' => 0x0D,
                        b't' => 0x09,
                        b'u' => self.hex4()?,
                        _ => {
                            self.i -= 1;
                            return Err(self.err(ParseErrorKind::InvalidEscape));
                        }
                    };
                    units.push(unit);
                }
                0x00..=0x1F => return Err(self.err(ParseErrorKind::ControlCharacterInString)),
                _ => {
                    // Copy one UTF-8 scalar value.
                    let len = utf8_len(c);
                    let end = (self.i + len).min(self.b.len());
                    let chunk = String::from_utf8_lossy(&self.b[self.i..end]);
                    units.extend(chunk.encode_utf16());
                    self.i = end;
                }
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
        let text = String::from_utf8_lossy(&self.b[start..self.i]);
        Ok(Value::Number(Number::from_lexical(&text)))
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
    }
}

fn utf8_len(lead: u8) -> usize {
    match lead {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

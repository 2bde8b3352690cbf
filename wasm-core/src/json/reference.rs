//! The implementation before the performance work, kept verbatim (test builds only) as the
//! oracle of the differential tests in `super::tests`: the faster code must accept, reject and
//! write exactly alike.

#![allow(dead_code)]

pub mod parse {
    use crate::json::parse::{MAX_DEPTH, ParseError, ParseErrorKind};
    use crate::json::value::{JsonString, Number, Object, Value};
    use std::collections::BTreeSet;

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
                obj.insert(name, v); // names were just checked unique
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
}

pub mod jcs {
    use crate::json::jcs::JcsError;
    use crate::json::value::{JsonString, Value};
    use std::cmp::Ordering;

    /// Canonical bytes of `value`.
    pub fn canonicalize(value: &Value) -> Result<Vec<u8>, JcsError> {
        let mut out = Vec::with_capacity(256);
        let mut path = String::new();
        write_value(value, &mut out, &mut path)?;
        Ok(out)
    }

    /// Canonical bytes of an object with one top-level member left out: the §6.4 signing input
    /// omits exactly the top-level `signature` while nested `signature` members stay protected.
    pub fn canonicalize_without(
        value: &Value,
        top_level_member: &str,
    ) -> Result<Vec<u8>, JcsError> {
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
    pub fn canonical_members(
        obj: &crate::json::Object,
    ) -> Result<Vec<(String, Vec<u8>)>, JcsError> {
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
        write_string(&JsonString::from(name.to_owned()), &mut bytes, "")?;
        bytes.push(b':');
        write_value(value, &mut bytes, &mut path)?;
        let at = parts.partition_point(|(k, _)| utf16_cmp(k, name) == Ordering::Less);
        parts.insert(at, (name.to_owned(), bytes));
        Ok(())
    }
}

pub mod compact {
    use crate::json::value::{JsonString, Value};

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
}

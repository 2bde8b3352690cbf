//! Absolute-URI identifiers (§2, checklist D-10..D-12).
//!
//! [`is_absolute_uri`] is the strict RFC 3986 predicate (D-11): printable ASCII only, every `%`
//! followed by two hex digits, bracketed IPv6 literals checked, IPv4 octets without leading
//! zeros, IPvFuture with `v` or `V`. Protocol `id` values add the schema's 512-character limit;
//! Registry evidence applies the same URI semantics without that limit.

use std::fmt;

/// The schema's `maxLength` for identifiers (`common#/$defs/id`).
pub const MAX_ID_LENGTH: usize = 512;

/// Why a string is not a protocol identifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdError {
    TooLong(usize),
    NotAbsoluteUri,
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdError::TooLong(n) => {
                write!(f, "identifier has {n} characters (at most {MAX_ID_LENGTH})")
            }
            IdError::NotAbsoluteUri => f.write_str("not an absolute RFC 3986 URI"),
        }
    }
}

impl std::error::Error for IdError {}

/// Checks a protocol identifier: absolute URI and at most 512 characters.
pub fn check_id(s: &str) -> Result<(), IdError> {
    // Every Command and Event carries a dozen ids, nearly all of the plain shape.
    if is_plain_id(s) {
        return Ok(());
    }
    check_id_fully(s)
}

/// [`check_id`] without the shortcut.
fn check_id_fully(s: &str) -> Result<(), IdError> {
    if s.chars().count() > MAX_ID_LENGTH {
        return Err(IdError::TooLong(s.chars().count()));
    }
    if !is_absolute_uri(s) {
        return Err(IdError::NotAbsoluteUri);
    }
    Ok(())
}

/// A sufficient (not necessary) condition for [`check_id`]: at most 512 bytes,
/// `scheme ":" path` with a valid scheme and a path of unreserved characters, sub-delims, `:`,
/// `@` and `/` only — no `%`, `?`, `#` or `//` authority, so every rule of RFC 3986
/// `absolute-URI` holds trivially. A branch-free scan, several times cheaper than the full check.
fn is_plain_id(s: &str) -> bool {
    /// `unreserved / sub-delims / ":" / "@" / "/"`, as a byte table (a branch-free scan).
    const PATH: [bool; 256] = {
        let mut table = [false; 256];
        let mut c = 0;
        while c < 256 {
            let b = c as u8;
            table[c] = is_unreserved(b) || is_sub_delim(b) || matches!(b, b':' | b'@' | b'/');
            c += 1;
        }
        table
    };
    let b = s.as_bytes();
    let Some(colon) = b.iter().position(|&c| c == b':') else {
        return false;
    };
    let (scheme, path) = (&b[..colon], &b[colon + 1..]);
    b.len() <= MAX_ID_LENGTH
        && scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
        && !path.starts_with(b"//")
        && path.iter().fold(true, |ok, &c| ok & PATH[usize::from(c)])
}

const fn is_unreserved(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~')
}

const fn is_sub_delim(c: u8) -> bool {
    matches!(
        c,
        b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
    )
}

/// Checks that every `%` starts a two-hex-digit escape and every other byte is allowed.
fn chars_ok(s: &[u8], extra: impl Fn(u8) -> bool) -> bool {
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == b'%' {
            if !(s.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && s.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
            {
                return false;
            }
            i += 3;
            continue;
        }
        if !(is_unreserved(c) || is_sub_delim(c) || extra(c)) {
            return false;
        }
        i += 1;
    }
    true
}

/// RFC 3986 `absolute-URI`-or-`URI`: `scheme ":" hier-part [ "?" query ] [ "#" fragment ]`.
pub fn is_absolute_uri(s: &str) -> bool {
    let b = s.as_bytes();
    if !b.iter().all(|c| (0x21..=0x7E).contains(c)) {
        return false;
    }
    let Some(colon) = b.iter().position(|&c| c == b':') else {
        return false;
    };
    let scheme = &b[..colon];
    if scheme.is_empty()
        || !scheme[0].is_ascii_alphabetic()
        || !scheme
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
    {
        return false;
    }
    let rest = &b[colon + 1..];
    let (before_fragment, fragment) = match rest.iter().position(|&c| c == b'#') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    if let Some(f) = fragment
        && !chars_ok(f, |c| matches!(c, b':' | b'@' | b'/' | b'?'))
    {
        return false;
    }
    // The query may itself contain `?`, so starting it at the `?` (mutant `i * 1`) changes no
    // outcome; starting it one byte earlier does (`http://[::1]?q`, tests/rules.rs).
    let (hier, query) = match before_fragment.iter().position(|&c| c == b'?') {
        Some(i) => (&before_fragment[..i], Some(&before_fragment[i + 1..])),
        None => (before_fragment, None),
    };
    if let Some(q) = query
        && !chars_ok(q, |c| matches!(c, b':' | b'@' | b'/' | b'?'))
    {
        return false;
    }
    let path = if let Some(after) = hier.strip_prefix(b"//") {
        let end = after.iter().position(|&c| c == b'/').unwrap_or(after.len());
        if !authority_ok(&after[..end]) {
            return false;
        }
        &after[end..]
    } else {
        hier
    };
    chars_ok(path, |c| matches!(c, b':' | b'@' | b'/'))
}

fn authority_ok(a: &[u8]) -> bool {
    let (userinfo, hostport) = match a.iter().position(|&c| c == b'@') {
        Some(i) => (Some(&a[..i]), &a[i + 1..]),
        None => (None, a),
    };
    if let Some(u) = userinfo
        && !chars_ok(u, |c| c == b':')
    {
        return false;
    }
    let (host_ok, port) = if hostport.first() == Some(&b'[') {
        let Some(close) = hostport.iter().position(|&c| c == b']') else {
            return false;
        };
        (ip_literal_ok(&hostport[1..close]), &hostport[close + 1..])
    } else {
        let end = hostport
            .iter()
            .position(|&c| c == b':')
            .unwrap_or(hostport.len());
        (chars_ok(&hostport[..end], |_| false), &hostport[end..])
    };
    if !host_ok {
        return false;
    }
    match port.split_first() {
        None => true,
        Some((b':', digits)) => digits.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    }
}

fn ip_literal_ok(s: &[u8]) -> bool {
    if let Some((b'v' | b'V', rest)) = s.split_first() {
        // IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
        let Some(dot) = rest.iter().position(|&c| c == b'.') else {
            return false;
        };
        let (hex, tail) = (&rest[..dot], &rest[dot + 1..]);
        return !hex.is_empty()
            && hex.iter().all(u8::is_ascii_hexdigit)
            && !tail.is_empty()
            && tail
                .iter()
                .all(|&c| is_unreserved(c) || is_sub_delim(c) || c == b':');
    }
    ipv6_ok(s)
}

/// RFC 3986 `IPv6address`, including `::` compression and an embedded IPv4 tail.
fn ipv6_ok(s: &[u8]) -> bool {
    let text = match std::str::from_utf8(s) {
        Ok(t) => t,
        Err(_) => return false,
    };
    let (head, tail, compressed) = match text.find("::") {
        Some(i) => {
            if text[i + 2..].contains("::") {
                return false;
            }
            (&text[..i], &text[i + 2..], true)
        }
        None => (text, "", false),
    };
    let split = |part: &str| -> Option<Vec<String>> {
        if part.is_empty() {
            Some(Vec::new())
        } else {
            Some(part.split(':').map(str::to_owned).collect())
        }
    };
    let (Some(h), Some(t)) = (split(head), split(tail)) else {
        return false;
    };
    let mut groups: Vec<String> = h;
    groups.extend(t);
    let mut count = 0usize;
    let last = groups.len().saturating_sub(1);
    for (i, g) in groups.iter().enumerate() {
        if i == last && g.contains('.') {
            if !ipv4_ok(g) {
                return false;
            }
            count += 2;
        } else if g.is_empty() || g.len() > 4 || !g.bytes().all(|c| c.is_ascii_hexdigit()) {
            return false;
        } else {
            count += 1;
        }
    }
    if compressed { count <= 7 } else { count == 8 }
}

fn ipv4_ok(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|c| c.is_ascii_digit())
                && (p.len() == 1 || !p.starts_with('0'))
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

#[cfg(test)]
mod plain_tests {
    use super::*;

    /// The one-pass shortcut never accepts what the full `Id` check refuses.
    #[test]
    fn plain_ids_are_ids() {
        let plain = [
            "urn:missionweaveprotocol:admission-record:0123abcd",
            "urn:a",
            "a:",
            "x+y.z-1:p@q/r!$&'()*+,;=~_",
        ];
        for s in plain {
            assert!(is_plain_id(s) && check_id_fully(s).is_ok(), "{s}");
        }
        // Short strings over an alphabet of every character class the grammar treats apart.
        let alphabet: Vec<char> = "aZ09+-._~!$&'()*,;=:@/%?#[]\" \\\u{7f}é".chars().collect();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut accepted = 0;
        for _ in 0..200_000 {
            let len = 1 + next() % 12;
            let s: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            if is_plain_id(&s) {
                accepted += 1;
                assert!(check_id_fully(&s).is_ok(), "{s:?}");
            }
        }
        assert!(
            accepted > 100,
            "the generator reaches the shortcut ({accepted})"
        );
        let long = format!("urn:{}", "a".repeat(509));
        assert!(!is_plain_id(&long) && check_id_fully(&long).is_err());
        assert!(is_plain_id(&long[1..]));
    }
}

//! Canonical unpadded base64url (RFC 4648 §5, checklist D-13) and `sha256:` content hashes (D-14).

use sha2::{Digest, Sha256};
use std::fmt;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Why a base64url spelling is not canonical.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Base64Error {
    /// A character outside the URL-safe alphabet (including `=` padding).
    InvalidCharacter { index: usize },
    /// A length of 1 mod 4 cannot encode whole bytes.
    InvalidLength,
    /// The unused low bits of the final character are not zero (§2: noncanonical spelling).
    NonzeroPadBits,
}

impl fmt::Display for Base64Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Base64Error::InvalidCharacter { index } => {
                write!(
                    f,
                    "character {index} is not in the unpadded base64url alphabet"
                )
            }
            Base64Error::InvalidLength => write!(f, "length is not a valid base64url length"),
            Base64Error::NonzeroPadBits => write!(f, "nonzero unused pad bits (noncanonical)"),
        }
    }
}

impl std::error::Error for Base64Error {}

fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    }
}

/// Decodes canonical unpadded base64url; any other spelling of the same bytes is rejected.
pub fn b64url_decode(text: &str) -> Result<Vec<u8>, Base64Error> {
    let bytes = text.as_bytes();
    if bytes.len() % 4 == 1 {
        return Err(Base64Error::InvalidLength);
    }
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    for (index, &c) in bytes.iter().enumerate() {
        let v = sextet(c).ok_or(Base64Error::InvalidCharacter { index })?;
        // The low six bits of `acc << 6` are zero, so `|` here is the same as `^` or `+`.
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if acc != 0 {
        return Err(Base64Error::NonzeroPadBits);
    }
    Ok(out)
}

/// Encodes bytes as canonical unpadded base64url.
pub fn b64url_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        // The three bytes occupy disjoint bits, so `|` here is the same as `^` or `+`.
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// `sha256:` followed by the lower-case hex SHA-256 of `data` (§2).
pub fn sha256_hash(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    push_hex(&mut out, &digest);
    out
}

/// Lower-case hex of `data` (hashes, frame-ID prefixes, `urn:uuid:` values).
pub fn hex(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len() * 2);
    push_hex(&mut out, data);
    out
}

fn push_hex(out: &mut String, data: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in data {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
}

/// True when `s` has the `sha256:<64 lower-case hex>` form.
pub fn is_sha256_hash(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

//! Canonical unpadded base64url (RFC 4648 §5, checklist D-13) and `sha256:` content hashes (D-14).

use sha2::{Digest, Sha256};
use std::fmt;

/// RFC 4648 §5 without padding, strict: `=` is refused, and so are nonzero unused bits in the
/// last character (the one canonical spelling of each byte string, D-13).
const ENGINE: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(false),
);

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

/// Decodes canonical unpadded base64url; any other spelling of the same bytes is rejected.
pub fn b64url_decode(text: &str) -> Result<Vec<u8>, Base64Error> {
    use base64::Engine as _;
    ENGINE.decode(text).map_err(|e| match e {
        base64::DecodeError::InvalidByte(index, _) => Base64Error::InvalidCharacter { index },
        base64::DecodeError::InvalidLength(_) => Base64Error::InvalidLength,
        base64::DecodeError::InvalidLastSymbol(_, _) => Base64Error::NonzeroPadBits,
        // `=` is outside the unpadded alphabet: say where the first one is.
        base64::DecodeError::InvalidPadding => Base64Error::InvalidCharacter {
            index: text.find('=').unwrap_or(text.len()),
        },
    })
}

/// Encodes bytes as canonical unpadded base64url.
pub fn b64url_encode(data: &[u8]) -> String {
    use base64::Engine as _;
    ENGINE.encode(data)
}

/// `sha256:` followed by the lower-case hex SHA-256 of `data` (§2).
pub fn sha256_hash(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    push_hex(&mut out, &digest);
    out
}

/// An identifier as one URL path segment or query value: every byte but the unreserved ones
/// and `:` percent-encoded, so that `urn:a:b` stays readable while `&`, `#`, `?`, `/`, `=` or
/// `%` in an id cannot end or change the segment (the console's links, the webhooks' links).
pub fn url_component(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b':') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
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

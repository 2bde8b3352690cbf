//! The console's key file: one human signing key, encrypted under a passphrase. The same
//! document is what IndexedDB holds at rest and what "export" downloads, so an exported file
//! imports anywhere and nothing ever holds the seed in clear outside memory.
//!
//! ```json
//! {"format":"missionweave-console-key","version":1,
//!  "principalId":"urn:missionweaveprotocol:human:alice","keyId":"urn:…:key:alice-…",
//!  "publicKey":"<base64url, 32 bytes>","createdAt":"2026-12-02T10:00:00Z",
//!  "kdf":{"name":"PBKDF2","hash":"SHA-256","iterations":600000,"salt":"<16 bytes>"},
//!  "cipher":{"name":"AES-GCM","iv":"<12 bytes>","ciphertext":"<32-byte seed + 16-byte tag>"}}
//! ```
//!
//! The AES-GCM additional data is [`KeyFile::associated_data`]: the identity the seed belongs
//! to, so a ciphertext moved into another file's header fails to decrypt. After decryption the
//! seed's public key must equal `publicKey` (checked by [`KeyFile::open`]). The encryption
//! itself is WebCrypto's (`custody::webcrypto`); this module is the format, tested natively.

use wasm_core::crypto::SecretSeed;
use wasm_core::encoding::{b64url_decode, b64url_encode};
use wasm_core::json::{self, Object, Value};

pub const FORMAT: &str = "missionweave-console-key";
pub const VERSION: u64 = 1;
/// PBKDF2-HMAC-SHA-256 iterations for new files (OWASP's 2023 figure for this hash).
pub const ITERATIONS: u32 = 600_000;
/// Files with fewer iterations are refused: they would make a stolen file cheap to attack.
pub const MIN_ITERATIONS: u32 = 100_000;
/// Files with more iterations are refused: the derivation runs before the passphrase can be
/// found wrong, so a hostile file asking for billions would hang the tab (10 million take a few
/// seconds in a browser, far above any honest file's 600,000).
pub const MAX_ITERATIONS: u32 = 10_000_000;
/// Passphrases shorter than this are refused when a key is created.
pub const MIN_PASSPHRASE_CHARS: usize = 12;

/// Why a key file was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyFileError {
    NotJson(String),
    Field(&'static str),
    Format,
    Version(u64),
    WeakKdf(u32),
    /// More PBKDF2 iterations than [`MAX_ITERATIONS`]: refused before any derivation runs.
    CostlyKdf(u32),
    /// The decrypted seed does not belong to `publicKey` (tampered file or wrong data).
    KeyMismatch,
}

impl std::fmt::Display for KeyFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyFileError::NotJson(e) => write!(f, "not JSON: {e}"),
            KeyFileError::Field(n) => write!(f, "missing or invalid member \"{n}\""),
            KeyFileError::Format => write!(f, "\"format\" is not \"{FORMAT}\""),
            KeyFileError::Version(v) => write!(f, "version {v} is not supported"),
            KeyFileError::WeakKdf(n) => {
                write!(f, "{n} PBKDF2 iterations (at least {MIN_ITERATIONS})")
            }
            KeyFileError::CostlyKdf(n) => {
                write!(f, "{n} PBKDF2 iterations (at most {MAX_ITERATIONS})")
            }
            KeyFileError::KeyMismatch => write!(f, "the key does not match its public key"),
        }
    }
}

/// A parsed (still encrypted) key file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyFile {
    pub principal_id: String,
    pub key_id: String,
    pub public_key: [u8; 32],
    pub created_at: String,
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub iv: Vec<u8>,
    /// Seed ciphertext and GCM tag.
    pub ciphertext: Vec<u8>,
}

fn bytes(o: &Value, ptr: &'static str, len: Option<usize>) -> Result<Vec<u8>, KeyFileError> {
    let b = o
        .pointer(ptr)
        .and_then(Value::as_str)
        .and_then(|s| b64url_decode(s).ok())
        .ok_or(KeyFileError::Field(ptr))?;
    match len {
        Some(n) if b.len() != n => Err(KeyFileError::Field(ptr)),
        _ => Ok(b),
    }
}

fn text(o: &Value, ptr: &'static str) -> Result<String, KeyFileError> {
    o.pointer(ptr)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 512)
        .map(str::to_owned)
        .ok_or(KeyFileError::Field(ptr))
}

impl KeyFile {
    /// The AES-GCM additional data: the identity the seed is bound to.
    pub fn associated_data(principal_id: &str, key_id: &str, public_key: &[u8; 32]) -> Vec<u8> {
        format!(
            "{FORMAT}/{VERSION}\n{principal_id}\n{key_id}\n{}",
            b64url_encode(public_key)
        )
        .into_bytes()
    }

    pub fn aad(&self) -> Vec<u8> {
        Self::associated_data(&self.principal_id, &self.key_id, &self.public_key)
    }

    /// Parses and checks a key file (strict JSON, then every member).
    pub fn parse(text_in: &str) -> Result<KeyFile, KeyFileError> {
        let v =
            json::parse(text_in.as_bytes()).map_err(|e| KeyFileError::NotJson(e.to_string()))?;
        if v.pointer("/format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(KeyFileError::Format);
        }
        let version = v
            .pointer("/version")
            .and_then(|n| match n {
                Value::Number(n) => n.as_safe_u64(),
                _ => None,
            })
            .ok_or(KeyFileError::Field("/version"))?;
        if version != VERSION {
            return Err(KeyFileError::Version(version));
        }
        if v.pointer("/kdf/name").and_then(Value::as_str) != Some("PBKDF2")
            || v.pointer("/kdf/hash").and_then(Value::as_str) != Some("SHA-256")
        {
            return Err(KeyFileError::Field("/kdf"));
        }
        if v.pointer("/cipher/name").and_then(Value::as_str) != Some("AES-GCM") {
            return Err(KeyFileError::Field("/cipher/name"));
        }
        let iterations = v
            .pointer("/kdf/iterations")
            .and_then(|n| match n {
                Value::Number(n) => n.as_safe_u64(),
                _ => None,
            })
            .and_then(|n| u32::try_from(n).ok())
            .ok_or(KeyFileError::Field("/kdf/iterations"))?;
        if iterations < MIN_ITERATIONS {
            return Err(KeyFileError::WeakKdf(iterations));
        }
        if iterations > MAX_ITERATIONS {
            return Err(KeyFileError::CostlyKdf(iterations));
        }
        let public_key: [u8; 32] = bytes(&v, "/publicKey", Some(32))?
            .try_into()
            .map_err(|_| KeyFileError::Field("/publicKey"))?;
        Ok(KeyFile {
            principal_id: text(&v, "/principalId")?,
            key_id: text(&v, "/keyId")?,
            public_key,
            created_at: text(&v, "/createdAt")?,
            iterations,
            salt: bytes(&v, "/kdf/salt", Some(16))?,
            iv: bytes(&v, "/cipher/iv", Some(12))?,
            ciphertext: bytes(&v, "/cipher/ciphertext", Some(48))?,
        })
    }

    /// The file's JSON text (member order fixed, as documented above).
    pub fn to_json(&self) -> String {
        let mut kdf = Object::new();
        kdf.insert("name", Value::string("PBKDF2"));
        kdf.insert("hash", Value::string("SHA-256"));
        kdf.insert("iterations", Value::from(u64::from(self.iterations)));
        kdf.insert("salt", Value::string(b64url_encode(&self.salt)));
        let mut cipher = Object::new();
        cipher.insert("name", Value::string("AES-GCM"));
        cipher.insert("iv", Value::string(b64url_encode(&self.iv)));
        cipher.insert("ciphertext", Value::string(b64url_encode(&self.ciphertext)));
        let mut o = Object::new();
        o.insert("format", Value::string(FORMAT));
        o.insert("version", Value::from(VERSION));
        o.insert("principalId", Value::string(self.principal_id.clone()));
        o.insert("keyId", Value::string(self.key_id.clone()));
        o.insert("publicKey", Value::string(b64url_encode(&self.public_key)));
        o.insert("createdAt", Value::string(self.created_at.clone()));
        o.insert("kdf", Value::Object(kdf));
        o.insert("cipher", Value::Object(cipher));
        json::to_string(&Value::Object(o))
    }

    /// Takes the decrypted plaintext (consumed and zeroized) and checks it is the seed of
    /// `publicKey`.
    pub fn open(&self, plaintext: &mut Vec<u8>) -> Result<SecretSeed, KeyFileError> {
        let seed = SecretSeed::from_slice(plaintext);
        zeroize::Zeroize::zeroize(plaintext);
        let seed = seed.ok_or(KeyFileError::KeyMismatch)?;
        if seed.public_key() != self.public_key {
            return Err(KeyFileError::KeyMismatch);
        }
        Ok(seed)
    }
}

/// A human Principal ID and key ID for a chosen name in the development Organization: the
/// name is 1–40 of `a-z`, `0-9`, `-`; the key ID carries a fingerprint of the public key, so a
/// second key for the same name never reuses a key ID.
pub fn dev_identity(name: &str, public_key: &[u8; 32]) -> Option<(String, String)> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-');
    if !ok {
        return None;
    }
    let fp = wasm_core::encoding::sha256_hash(public_key);
    let short = fp.trim_start_matches("sha256:").get(..12)?.to_owned();
    Some((
        format!("urn:missionweaveprotocol:human:{name}"),
        format!("urn:missionweaveprotocol:key:{name}-{short}"),
    ))
}

/// The passphrase rule for new keys, in characters (not bytes: CJK passphrases count fairly).
pub fn passphrase_ok(p: &str) -> bool {
    p.chars().count() >= MIN_PASSPHRASE_CHARS
}

//! Private key material: the 32-byte RFC 8032 seed of an Ed25519 key.
//!
//! A seed lives only in [`SecretSeed`]: not `Clone` (a copy is an explicit
//! [`SecretSeed::duplicate`]), zeroized on drop, and its `Debug` prints no byte of it, so no
//! `{:?}` of a config, an authority or a service can leak a key.

use crate::encoding::{b64url_decode, b64url_encode};
use std::fmt;
use zeroize::{Zeroize, Zeroizing};

/// An Ed25519 private key seed.
pub struct SecretSeed(Zeroizing<[u8; 32]>);

impl SecretSeed {
    /// Takes the seed out of `bytes` and clears them.
    pub fn take(bytes: &mut [u8; 32]) -> SecretSeed {
        let seed = SecretSeed(Zeroizing::new(*bytes));
        bytes.zeroize();
        seed
    }

    /// A seed from a slice of exactly 32 bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<SecretSeed> {
        let mut raw: [u8; 32] = bytes.try_into().ok()?;
        Some(SecretSeed::take(&mut raw))
    }

    /// A seed from canonical unpadded base64url of 32 bytes (key files).
    pub fn from_b64url(text: &str) -> Option<SecretSeed> {
        let decoded = Zeroizing::new(b64url_decode(text).ok()?);
        SecretSeed::from_slice(&decoded)
    }

    /// The seed as base64url, for writing a key file (the text is zeroized when dropped).
    pub fn to_b64url(&self) -> Zeroizing<String> {
        Zeroizing::new(b64url_encode(self.0.as_ref()))
    }

    /// The raw bytes, for handing to the signing library.
    pub fn expose(&self) -> &[u8; 32] {
        &self.0
    }

    /// An explicit second copy (both are zeroized on drop).
    pub fn duplicate(&self) -> SecretSeed {
        SecretSeed(Zeroizing::new(*self.0))
    }

    /// The Ed25519 public key of this seed (RFC 8032 §5.1.5, by `ed25519-dalek`; the signing
    /// key is zeroized when dropped).
    pub fn public_key(&self) -> [u8; 32] {
        ed25519_dalek::SigningKey::from_bytes(&self.0)
            .verifying_key()
            .to_bytes()
    }
}

impl fmt::Debug for SecretSeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretSeed(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_clears_the_source_and_debug_shows_nothing() {
        let mut raw = [0x5au8; 32];
        let seed = SecretSeed::take(&mut raw);
        assert_eq!(raw, [0u8; 32]);
        assert_eq!(seed.expose(), &[0x5au8; 32]);
        let shown = format!("{seed:?}");
        assert_eq!(shown, "SecretSeed(<redacted>)");
        assert!(!shown.contains("5a") && !shown.contains("90"));
    }

    #[test]
    fn base64url_round_trip_and_wrong_lengths() {
        let seed = SecretSeed::from_slice(&[7u8; 32]).expect("32 bytes");
        let text = seed.to_b64url();
        let again = SecretSeed::from_b64url(&text).expect("round trip");
        assert_eq!(again.expose(), seed.expose());
        assert!(SecretSeed::from_slice(&[7u8; 31]).is_none());
        assert!(SecretSeed::from_slice(&[7u8; 33]).is_none());
        assert!(SecretSeed::from_b64url("AAAA").is_none());
        assert!(SecretSeed::from_b64url("not base64!").is_none());
        assert_eq!(seed.duplicate().expose(), seed.expose());
    }
}

//! The Organization service's signing keys, shared by everything that signs as the service:
//! the authority's owner thread (every Event), the binding's `session_open` (HELLO), the
//! webhook notices and the Agent Card registrations. After `org key rotate service` the
//! Registry binds two keys to the service Principal for a grace period; each signer asks
//! [`ServiceKeys::at`] for the key valid at the time it signs, so an Event is always signed by
//! a key the Registry holds valid at its `occurredAt` (§6.4: a verifier checks the signature
//! against the key's validity window at the signed time), never by one not yet or no longer
//! valid.
//!
//! The running server's watch of the Organization directory ([`crate::org::watch`]) replaces
//! the held keys and their windows within a second of a rotation: no restart.

use std::sync::{Arc, RwLock};

use wasm_core::authority::Micros;
use wasm_core::crypto::SecretSeed;
use wasm_core::crypto::ed25519::Signer;
use wasm_core::crypto::registry::ValidatedRegistry;

/// One held key of the service Principal, with the validity window its Registry binding has.
pub struct HeldKey {
    pub key_id: String,
    pub seed: SecretSeed,
    pub signer: Signer,
    /// `validFrom` of the binding.
    pub valid_from: Micros,
    /// The earliest of `validUntil` and `revokedAt`, if any.
    pub ends: Option<Micros>,
}

impl std::fmt::Debug for HeldKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldKey")
            .field("key_id", &self.key_id)
            .field("valid_from", &self.valid_from)
            .field("ends", &self.ends)
            .finish_non_exhaustive()
    }
}

impl HeldKey {
    /// `seed` under `key_id`, with the window `registry` binds it for; `None` when the
    /// Registry does not bind it (a key file of another Organization, or one never bound).
    pub fn bound(key_id: &str, seed: SecretSeed, registry: &ValidatedRegistry) -> Option<HeldKey> {
        let b = registry.binding(key_id)?;
        if b.public_key.as_bytes() != &seed.public_key() {
            return None;
        }
        let ends = [&b.valid_until, &b.revoked_at]
            .into_iter()
            .flatten()
            .map(Micros::from_timestamp)
            .min();
        Some(HeldKey {
            key_id: key_id.to_owned(),
            signer: Signer::from_seed(&seed),
            seed,
            valid_from: Micros::from_timestamp(&b.valid_from),
            ends,
        })
    }

    /// The half-open window of S-5: `validFrom <= t < end`.
    pub fn valid_at(&self, t: Micros) -> bool {
        self.valid_from <= t && self.ends.is_none_or(|e| t < e)
    }
}

/// The held keys, swapped whole (readers take a snapshot).
#[derive(Clone, Debug)]
pub struct ServiceKeys {
    held: Arc<RwLock<Arc<Vec<Arc<HeldKey>>>>>,
}

impl ServiceKeys {
    /// The keys given (at least the one the Organization names).
    pub fn new(keys: Vec<HeldKey>) -> ServiceKeys {
        ServiceKeys {
            held: Arc::new(RwLock::new(Arc::new(
                keys.into_iter().map(Arc::new).collect(),
            ))),
        }
    }

    /// One key, valid at all times (a Registry that does not bind it is the caller's own
    /// check: the development Organization and a deployment's `--authority-key`).
    pub fn single(key_id: &str, seed: &SecretSeed) -> ServiceKeys {
        ServiceKeys::new(vec![HeldKey {
            key_id: key_id.to_owned(),
            signer: Signer::from_seed(seed),
            seed: seed.duplicate(),
            valid_from: Micros(i64::MIN),
            ends: None,
        }])
    }

    /// Replaces the held keys (a rotation seen by the Organization's watch).
    pub fn replace(&self, keys: Vec<HeldKey>) {
        let next = Arc::new(keys.into_iter().map(Arc::new).collect());
        match self.held.write() {
            Ok(mut w) => *w = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
    }

    fn snapshot(&self) -> Arc<Vec<Arc<HeldKey>>> {
        match self.held.read() {
            Ok(r) => Arc::clone(&r),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The key to sign with at `t`: of the held keys valid at `t`, the one bound last (the
    /// latest `validFrom`), so that the new key signs from the moment a rotation binds it and
    /// the old one only while nothing newer is held; between keys bound in the same second,
    /// the one given first (the Organization's current key). `None`: no held key is valid at
    /// `t`, and nothing may be signed.
    pub fn at(&self, t: Micros) -> Option<Arc<HeldKey>> {
        self.snapshot()
            .iter()
            .rev()
            .filter(|k| k.valid_at(t))
            .max_by_key(|k| k.valid_from)
            .cloned()
    }

    /// The key IDs held, in order (for logs and tests).
    pub fn key_ids(&self) -> Vec<String> {
        self.snapshot().iter().map(|k| k.key_id.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8, from: i64, ends: Option<i64>) -> HeldKey {
        let seed = SecretSeed::take(&mut [n; 32]);
        HeldKey {
            key_id: format!("k{n}"),
            signer: Signer::from_seed(&seed),
            seed,
            valid_from: Micros::from_seconds(from),
            ends: ends.map(Micros::from_seconds),
        }
    }

    /// Across a rotation at 100 with a grace until 160: the old key before 100, the new one
    /// from 100; nothing before the old key's start; the old key alone after its end signs
    /// nothing.
    #[test]
    fn the_key_valid_at_the_time_signs_and_the_newest_wins_during_the_grace() {
        let keys = ServiceKeys::new(vec![key(1, 10, Some(160)), key(2, 100, None)]);
        let id = |t| keys.at(Micros::from_seconds(t)).map(|k| k.key_id.clone());
        assert_eq!(id(5), None, "before every window");
        assert_eq!(id(99).as_deref(), Some("k1"));
        assert_eq!(id(100).as_deref(), Some("k2"));
        assert_eq!(id(159).as_deref(), Some("k2"));
        assert_eq!(id(1000).as_deref(), Some("k2"));
        // Bound in the same second (a rotation right after `org init`): the key given first.
        let same = ServiceKeys::new(vec![key(2, 10, None), key(1, 10, Some(160))]);
        assert_eq!(
            same.at(Micros::from_seconds(20))
                .map(|k| k.key_id.clone())
                .as_deref(),
            Some("k2")
        );
        keys.replace(vec![key(1, 10, Some(160))]);
        assert_eq!(id(120).as_deref(), Some("k1"));
        assert_eq!(id(160), None, "an ended key signs nothing");
    }
}

//! Key custody (issue 13): a human's signing key is generated in (or imported into) this
//! browser and never leaves it. At rest it is an encrypted key file (`keyfile`) in IndexedDB
//! (`store`), encrypted with WebCrypto PBKDF2 + AES-GCM under a passphrase (`webcrypto`);
//! unlocked, it lives only in `wasm_core::crypto::SecretSeed` / `ed25519::Signer`.

pub mod demo;
pub mod import;
pub mod keyfile;
pub mod store;
pub mod webcrypto;

//! The Signed Document Verification Profile (§6.4): strict Ed25519 on the dalek crates, Registry
//! evidence, the six verification stages, signing and the signing hash.

pub mod ed25519;
#[cfg(test)]
pub(crate) mod fixture;
pub mod profile;
pub mod registry;
pub mod request;
pub mod secret;
pub mod verify;

pub use profile::{DocumentKind, SignerRule};
pub use registry::{BindingError, KeyBinding, RegistryError, RegistryEvidence, ValidatedRegistry};
pub use secret::SecretSeed;
pub use verify::{
    Stage, Verified, VerifyError, sign_document, sign_document_with, verify, verify_batch,
};

//! The Registry every Event is verified against: `GET /api/registry` answers the bundle's
//! Registry-fixture shape, read by `RegistryEvidence::from_fixture_json` and validated by the
//! same Organization-wide checks the server uses (§6.4).

use wasm_core::crypto::registry::{RegistryEvidence, ValidatedRegistry};

/// Parses and validates Registry-fixture JSON.
pub fn parse(bytes: &[u8]) -> Result<ValidatedRegistry, String> {
    let v = wasm_core::json::parse(bytes).map_err(|e| e.to_string())?;
    RegistryEvidence::from_fixture_json(&v)
        .map_err(|e| e.to_string())?
        .validate()
}

pub async fn fetch() -> Result<ValidatedRegistry, String> {
    let bytes = crate::web::get_bytes("/api/registry").await?;
    parse(&bytes)
}

//! The Registry every Event is verified against: `GET /api/registry` answers the bundle's
//! Registry-fixture shape, read by `RegistryEvidence::from_registry_json` (the fixture's shape
//! without its cap of 64 bindings: a running Organization outgrows it with every enrolled key)
//! and validated by the same Organization-wide checks the server uses (§6.4).

use wasm_core::crypto::registry::{RegistryEvidence, ValidatedRegistry};

/// Parses and validates a served Registry (the page's and the Worker pool's).
pub fn parse(bytes: &[u8]) -> Result<ValidatedRegistry, String> {
    let v = wasm_core::json::parse(bytes).map_err(|e| e.to_string())?;
    RegistryEvidence::from_registry_json(&v)
        .map_err(|e| e.to_string())?
        .validate()
        .map_err(|e| e.to_string())
}

thread_local! {
    /// The bytes of the Registry last fetched and validated: what the socket's Worker pool
    /// verifies against (the same evidence as the page's `RegistryCheck`).
    static LAST: std::cell::RefCell<Option<std::rc::Rc<[u8]>>> = const { std::cell::RefCell::new(None) };
}

pub async fn fetch() -> Result<ValidatedRegistry, String> {
    let bytes = crate::web::get_bytes("/api/registry").await?;
    let r = parse(&bytes)?;
    LAST.with(|l| *l.borrow_mut() = Some(bytes.into()));
    Ok(r)
}

/// The Registry-fixture bytes of the last [`fetch`] (for the Worker pool).
pub fn last_fixture() -> Option<std::rc::Rc<[u8]>> {
    LAST.with(|l| l.borrow().clone())
}

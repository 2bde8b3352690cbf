//! Bounds that both edges apply (the HTTP `POST /api/commands` and the `/ws` binding).

/// The largest request body `POST /api/commands` reads (the binding's bound, its reasons
/// given there). Larger bodies get 413 unread.
pub use wasm_core::binding::limits::MAX_COMMAND_BYTES;

//! The frames the node writes, as the server's gateway writes them (`server/src/gateway/mod.rs`
//! `error_frame`, `event_frame`): the §19 document and the `ERROR` frame are the binding's own
//! (`wasm_core::binding::error`, which the server's `WireError` builds its document with);
//! nothing here reads a clock or a random source.

use wasm_core::authority::Micros;
pub use wasm_core::binding::error::Refusal;

/// An `ERROR` frame around the refusal's document at `at`.
pub fn error_frame(frame_id: &str, e: &Refusal, at: Micros) -> String {
    wasm_core::binding::error::error_frame(frame_id, e.document(at))
}

/// An `EVENT` frame around an Event's stored JCS text, not re-parsed (the binding's, as the
/// gateway sends it).
pub use wasm_core::binding::frames::event_frame;

//! The wall clock, read at the edge: the core takes `now` as an input (sans-IO); the server
//! reads it here and passes it in.

use std::time::{SystemTime, UNIX_EPOCH};
use wasm_core::authority::Micros;

/// Now, in microseconds since the Unix epoch (the core's `Micros`).
pub fn now() -> Micros {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Micros(i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

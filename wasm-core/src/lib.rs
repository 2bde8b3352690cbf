//! MissionWeaveProtocol 0.1 protocol core.
//!
//! Sans-IO: nothing here reads a clock, a file, a socket or a random source. Callers pass `now`,
//! keys and randomness in, so the same code runs in the server and, compiled for
//! `wasm32-unknown-unknown`, in the browser (see `docs/architecture.md`).
#![forbid(unsafe_code)]

pub mod admission;
pub mod audit;
pub mod authority;
pub mod binding;
pub mod conformance;
pub mod crypto;
pub mod encoding;
pub mod frame;
pub mod id;
pub mod json;
pub mod model;
pub mod order;
pub mod time;
pub mod views;

/// The 27 wire codes of §19: every rejection in the core carries one of these.
pub use model::error::{ErrorCode, ProtocolError};

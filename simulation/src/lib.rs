//! Tooling around the MissionWeaveProtocol 0.1 core, kept apart from the product (issue 27):
//! the §22 demo's simulated Agents, the in-memory test Organization, the behavioural scenario
//! runner and the core benchmark. Sans-IO like `wasm-core`, so it also runs in the browser (the
//! console's demo pages and the browser tests); `wasm-core` never depends on it.
#![forbid(unsafe_code)]

pub mod agents;
pub mod bench;
pub mod cards;
pub mod harness;
pub mod kit;
pub mod scenario;
pub mod vecmap;

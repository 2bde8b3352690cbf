//! `weave-console` as a library: the embedded Group Authority and its store, the WebSocket
//! binding, the HTTP application, the proxy, Organizations and enrolment, the §22 demo's runner,
//! and one module per subcommand (`cli`). `src/main.rs` only parses the command line and calls
//! the subcommand.

pub mod agents;
pub mod artifacts;
pub mod authority;
pub mod bundle;
pub mod cards;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod console;
pub mod devclock;
pub mod devorg;
pub mod endpoint;
pub mod enrol;
pub mod gateway;
pub mod guard;
pub mod http;
pub mod limits;
pub mod live_registry;
pub mod notify;
pub mod ops;
pub mod org;
pub mod proxy;
pub mod registry_api;
pub mod request_log;
pub mod runtime;
pub mod service_keys;
pub mod store;
pub mod wire;

#[cfg(test)]
mod http_tests;

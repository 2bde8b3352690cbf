//! The WebSocket binding's pure rules (§17, docs/binding.md), shared by every host of `/ws`:
//! the server's gateway (`server/src/gateway/`) and the static demo's in-memory node
//! (`demo-node`). Each host keeps only its I/O (sockets, clocks, random sources, stores);
//! what a client can observe of the binding — the `HELLO` transcript and its check
//! (`hello`), the §19 document of a refusal (`error`), who may read or `ACK` a Group
//! (`access`), the bounds on frames, the replay page and the lifetimes (`limits`), the
//! `EVENT` frame and the `PING` echo (`frames`) — is written once, here.

pub mod access;
pub mod error;
pub mod frames;
pub mod hello;
pub mod limits;

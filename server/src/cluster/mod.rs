//! Several nodes over one PostgreSQL database (`serve --store postgres://…`, docs/cluster.md):
//! one writer at a time, elected by a lease row and fenced in every append by its epoch
//! (`lease`, `pg`); every node folds the shared log and fans it out to its own subscribers
//! (`node`); Commands reaching a node that is not the writer are forwarded to it (`forward`).

pub mod forward;
pub mod lease;
pub mod node;
pub mod pg;

pub use node::{ClusterConfig, SharedClock, Started};

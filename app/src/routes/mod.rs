//! One module per route (deep-linkable). In this slice each view renders its designed
//! loading, error and empty states; the view models from `wasm-core/src/views/` fill them
//! route by route.

pub mod agents;
pub mod approvals;
pub mod board;
pub mod conversations;
pub mod events;
pub mod lazy;
pub mod ledger;
pub mod mission;
pub mod not_found;
pub mod protocol;
pub mod settings;
pub mod sign_in;

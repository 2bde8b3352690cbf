//! Pieces shared by the views.

pub mod artifact;
pub mod audit_export;
pub mod audit_verify;
pub mod cheat_sheet;
pub mod header;
pub mod ident;
pub mod live;
pub mod notices;
pub mod outcome;
pub mod proposals;
pub mod registry;
pub mod session;
pub mod signing_summary;
pub mod states;
pub mod visitor;
pub mod wire;

//! The Membership Events (§8; payloads.md §6.11–§6.13): each carries the object it creates or
//! changes, whole.

use crate::authority::projection::{DelegationGrant, Membership};
use crate::model::common::Actor;

one_member!(
    /// `membership.changed`: the whole Membership after the change.
    MembershipChanged { membership: Membership = "membership" }
);

one_member!(
    /// `membership.ended`: the Principal whose Membership in the Event's Group ends.
    MembershipEnded { principal: Actor = "principal" }
);

one_member!(
    /// `membership.delegation.granted` (§9.1): the new Delegation Grant.
    DelegationGranted { delegation_grant: DelegationGrant = "delegationGrant" }
);

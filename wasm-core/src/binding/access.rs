//! Who may read a Group over the binding (§14, §17.2, H-10): a principal holding an active
//! Membership reads after its `visibilityAfterSequence`; an owner up the Mission tree (full
//! inspection rights) reads the whole history; anyone else, and any unknown Group, gets the
//! same `GROUP_NOT_FOUND`, so that a hidden Group's existence is not revealed. `ACK` takes an
//! active Membership only (§16: Cursors are a member's).

use super::error::{BindingError, Refusal};
use crate::authority::State;
use crate::json::Value;
use crate::model::common::ActorType;

/// Where a reader may start, from what it holds: `Some(visibility_after)` for an active
/// Membership, `Some(0)` for an inspector, `None` (hidden) otherwise. `membership`: whether
/// the Membership is active, and its visibility start. The server's hub applies this to its
/// cached view of the State, demo-node to the State itself ([`visibility_after`]).
pub fn readable(membership: Option<(bool, u64)>, inspector: bool) -> Option<u64> {
    match membership {
        Some((true, after)) => Some(after),
        _ => inspector.then_some(0),
    }
}

/// The principals with full inspection rights on `group`: the owners up its Mission tree.
pub fn inspectors(state: &State, group: &str) -> Vec<String> {
    state
        .mission_of_group(group)
        .map(|m| {
            state
                .owners_up_the_tree(m)
                .into_iter()
                .map(|a| a.id.as_str().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Where `principal` may read `group` from in `state` ([`readable`]); `None` for an unknown
/// Group too.
pub fn visibility_after(state: &State, group: &str, principal: &str) -> Option<u64> {
    state.group(group)?;
    let membership = state
        .membership(group, principal)
        .map(|m| (m.is_active(), m.visibility_after_sequence));
    match membership {
        Some((true, after)) => Some(after),
        // The tree is walked only for a principal without an active Membership.
        _ => readable(
            membership,
            inspectors(state, group).iter().any(|p| p == principal),
        ),
    }
}

/// Whether a `COMMAND`'s Command names the session's principal as its actor (binding.md,
/// "COMMAND": a session submits only its own principal's Commands).
pub fn is_session_principal(command: &Value, principal_id: &str, kind: ActorType) -> bool {
    command.pointer("/actor/id").and_then(Value::as_str) == Some(principal_id)
        && command.pointer("/actor/type").and_then(Value::as_str) == Some(kind.as_str())
}

/// Whether `principal` may `ACK` `group`: an active Membership (an ended one is answered as
/// an unknown Group).
pub fn may_ack(state: &State, group: &str, principal: &str) -> bool {
    state
        .membership(group, principal)
        .is_some_and(|m| m.is_active())
}

/// The answer to a `SUBSCRIBE` or `ACK` of `frame_id` naming a Group the principal may not
/// read or `ACK`, and to one naming a Group that does not exist: the same `GROUP_NOT_FOUND`
/// (code, message, members), so that a hidden Group's existence is not revealed (§17.2).
pub fn group_not_found(group: &str, frame_id: &str) -> Refusal {
    BindingError::GroupNotFound
        .refusal()
        .in_group(group)
        .about_frame(Some(frame_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_read_from_their_start_inspectors_from_the_beginning_others_nothing() {
        assert_eq!(readable(Some((true, 7)), false), Some(7));
        assert_eq!(readable(Some((true, 7)), true), Some(7));
        assert_eq!(readable(Some((false, 7)), true), Some(0));
        assert_eq!(readable(Some((false, 7)), false), None);
        assert_eq!(readable(None, true), Some(0));
        assert_eq!(readable(None, false), None);
        let empty = State::default();
        assert_eq!(visibility_after(&empty, "urn:g:1", "urn:p:1"), None);
        assert!(!may_ack(&empty, "urn:g:1", "urn:p:1"));
        assert!(inspectors(&empty, "urn:g:1").is_empty());
        let c = crate::json::parse(br#"{"actor":{"type":"human","id":"urn:p:1"}}"#).expect("json");
        assert!(is_session_principal(&c, "urn:p:1", ActorType::Human));
        assert!(!is_session_principal(&c, "urn:p:1", ActorType::Agent));
        assert!(!is_session_principal(&c, "urn:p:2", ActorType::Human));
    }

    #[test]
    fn a_hidden_group_is_answered_as_one_that_does_not_exist() {
        let e = group_not_found("urn:g:1", "urn:f:1");
        assert_eq!(e.code, crate::model::error::ErrorCode::GroupNotFound);
        assert_eq!(e.message, BindingError::GroupNotFound.message());
        assert_eq!(e.group_id.as_deref(), Some("urn:g:1"));
        assert_eq!(e.related_frame_id.as_deref(), Some("urn:f:1"));
        assert_eq!(e.fatal, None, "the connection stays open");
    }
}

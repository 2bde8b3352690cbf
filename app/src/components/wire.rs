//! A short explanation of each of the 27 wire codes (§19, `ErrorCode`) in the chosen language;
//! the code itself is always shown verbatim beside it.

use crate::i18n::*;
use leptos_i18n::td_string;
use wasm_core::model::error::ErrorCode;

/// The explanation of `code` in `locale`.
pub fn explain(locale: Locale, code: ErrorCode) -> String {
    match code {
        ErrorCode::UnsupportedVersion => td_string!(locale, wire.unsupported_version).to_string(),
        ErrorCode::AuthRequired => td_string!(locale, wire.auth_required).to_string(),
        ErrorCode::AuthInvalidSignature => {
            td_string!(locale, wire.auth_invalid_signature).to_string()
        }
        ErrorCode::AuthStaleSession => td_string!(locale, wire.auth_stale_session).to_string(),
        ErrorCode::AuthStaleCoordinator => {
            td_string!(locale, wire.auth_stale_coordinator).to_string()
        }
        ErrorCode::AuthForbidden => td_string!(locale, wire.auth_forbidden).to_string(),
        ErrorCode::GroupNotFound => td_string!(locale, wire.group_not_found).to_string(),
        ErrorCode::MembershipRequired => td_string!(locale, wire.membership_required).to_string(),
        ErrorCode::MembershipStale => td_string!(locale, wire.membership_stale).to_string(),
        ErrorCode::SchemaValidationFailed => {
            td_string!(locale, wire.schema_validation_failed).to_string()
        }
        ErrorCode::InvalidCommand => td_string!(locale, wire.invalid_command).to_string(),
        ErrorCode::InvalidStateTransition => {
            td_string!(locale, wire.invalid_state_transition).to_string()
        }
        ErrorCode::RevisionConflict => td_string!(locale, wire.revision_conflict).to_string(),
        ErrorCode::ActionIdCollision => td_string!(locale, wire.action_id_collision).to_string(),
        ErrorCode::UnknownCriticalExtension => {
            td_string!(locale, wire.unknown_critical_extension).to_string()
        }
        ErrorCode::WorkContractIncomplete => {
            td_string!(locale, wire.work_contract_incomplete).to_string()
        }
        ErrorCode::WorkOfferExpired => td_string!(locale, wire.work_offer_expired).to_string(),
        ErrorCode::WorkAlreadyOwned => td_string!(locale, wire.work_already_owned).to_string(),
        ErrorCode::WorkLeaseExpired => td_string!(locale, wire.work_lease_expired).to_string(),
        ErrorCode::WorkStaleOwnership => td_string!(locale, wire.work_stale_ownership).to_string(),
        ErrorCode::ApprovalRequired => td_string!(locale, wire.approval_required).to_string(),
        ErrorCode::BudgetExceeded => td_string!(locale, wire.budget_exceeded).to_string(),
        ErrorCode::RateLimited => td_string!(locale, wire.rate_limited).to_string(),
        ErrorCode::Backpressure => td_string!(locale, wire.backpressure).to_string(),
        ErrorCode::CursorTooOld => td_string!(locale, wire.cursor_too_old).to_string(),
        ErrorCode::ProtocolViolation => td_string!(locale, wire.protocol_violation).to_string(),
        ErrorCode::InternalError => td_string!(locale, wire.internal_error).to_string(),
    }
}

/// The explanation for a wire code's text, if it is one of the 27.
pub fn explain_text(locale: Locale, code: &str) -> Option<String> {
    ErrorCode::from_wire(code).map(|c| explain(locale, c))
}

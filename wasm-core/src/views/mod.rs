//! The console's view models (issue 13): projections of the same [`State`] the authority's
//! reducer builds, computed here so the browser renders them with no second implementation of
//! any protocol rule. Every rule a view shows (who may approve, why a WorkItem is not running,
//! what the ledger still allows) is asked of the authority's own guards and handler predicates.
//!
//! One submodule per view: [`board`] (Mission board), [`dag`] (WorkItem DAG, "why not running",
//! critical path) with [`layout`] (layered drawing and live updates), [`ledger`] (Budget
//! Ledger), [`approvals`] (approval inbox), [`timeline`] (Event log and time travel),
//! [`conversations`] and [`agents`]. [`Views::build`] builds them all from a `State` at one
//! position of the log. See docs/views.md.

pub mod agents;
pub mod approvals;
pub mod board;
pub mod conversations;
pub mod dag;
pub mod layout;
pub mod ledger;
pub mod timeline;

use crate::authority::clock::Micros;
use crate::authority::projection::Mission;
use crate::authority::state::State;
use crate::json::Value;
use crate::model::common::Actor;
use crate::model::membership::MembershipState;

/// Who is looking: a Principal (a human at the console, usually) or the Organization's own
/// operators, who see every Mission.
#[derive(Clone, Debug, PartialEq)]
pub enum Viewer {
    Principal(Actor),
    Organization,
}

impl Viewer {
    /// Whether the viewer may see `mission` (§8, H-10): a Membership in its Group that has
    /// not ended, or ownership of it or of any ancestor Mission (the root MissionOwner
    /// inspects the complete Mission tree, §14).
    pub fn sees(&self, state: &State, mission: &Mission) -> bool {
        let who = match self {
            Viewer::Organization => return true,
            Viewer::Principal(a) => a,
        };
        if state
            .membership(&mission.group_id, who.id.as_str())
            .is_some_and(|m| m.status != MembershipState::Ended)
        {
            return true;
        }
        state.owners_up_the_tree(mission).contains(&who)
    }

    /// The viewing Principal, if any.
    pub fn actor(&self) -> Option<&Actor> {
        match self {
            Viewer::Principal(a) => Some(a),
            Viewer::Organization => None,
        }
    }
}

/// The Mission states of §7.1, in board column order (the schema's order).
pub use crate::model::mission::MissionState;

impl MissionState {
    /// The state of a Mission projection's `status` as text (a filter's value).
    pub fn parse(status: &str) -> Option<MissionState> {
        MissionState::from_wire(status)
    }
}

/// The WorkItem states of §10.2 (the schema's enum and order).
pub use crate::model::work_item::WorkItemState as WorkState;

impl WorkState {
    /// The state of a WorkItem projection's `status` as text.
    pub fn parse(status: &str) -> Option<WorkState> {
        WorkState::from_wire(status)
    }

    /// `verified`, `failed` and `cancelled` are terminal (§10.2).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            WorkState::Verified | WorkState::Failed | WorkState::Cancelled
        )
    }
}

/// Every view at one position of the log, for one viewer.
#[derive(Clone, Debug)]
pub struct Views {
    pub board: board::MissionBoard,
    pub approvals: approvals::ApprovalInbox,
    pub agents: agents::AgentsView,
    pub conversations: Vec<conversations::ConversationView>,
}

impl Views {
    /// Builds the state-only views from `state` (e.g. [`timeline::TimeTravel::state_at`]) as
    /// `viewer` sees them at `now`. The DAG, the ledger and the timeline take a Mission or the
    /// Event log as well and are built on demand ([`dag::DagView::build`],
    /// [`ledger::LedgerView::build`], [`timeline::Timeline::build`]).
    pub fn build(state: &State, viewer: &Viewer, now: Micros) -> Views {
        Views::build_with_rejections(state, viewer, &[], now)
    }

    /// [`Views::build`] with the rejections the client saw (cooperation override requests
    /// and budget escalations in the inbox, §12, §20).
    pub fn build_with_rejections(
        state: &State,
        viewer: &Viewer,
        seen: &[SeenRejection],
        now: Micros,
    ) -> Views {
        let approvals = approvals::ApprovalInbox::build(state, viewer, seen, now);
        Views {
            board: board::MissionBoard::build(state, viewer, &approvals, now),
            agents: agents::AgentsView::build(state, viewer),
            conversations: conversations::ConversationView::all(state, viewer),
            approvals,
        }
    }
}

/// A rejection the client saw for one of its Commands. Rejections are not Events (§15.3), so
/// the views that list them (budget escalations, cooperation-limit requests) take them as
/// input from the client.
#[derive(Clone, Debug, PartialEq)]
pub struct SeenRejection {
    /// When the client received it.
    pub at: Micros,
    /// Who sent the rejected Command.
    pub actor: Actor,
    pub command_kind: String,
    pub action_id: String,
    pub group_id: Option<String>,
    pub work_item_id: Option<String>,
    pub rejection: crate::authority::Rejection,
}

impl SeenRejection {
    /// A string member of the rejection's `details`.
    pub fn detail(&self, name: &str) -> Option<&str> {
        self.rejection.details.get(name).and_then(Value::as_str)
    }
}

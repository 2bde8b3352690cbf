//! The console-wide reactive state, provided as a context by the shell (`use_console()`).
//!
//! **Shared data API (read side, issue 13; every view, and the approvals view of the write
//! side, builds on it).** [`Console::snapshot`] is the protocol [`State`] replayed in this
//! browser by the authority's own reducer (`wasm_core::authority::evolve::apply`, folded by
//! [`crate::fold::EventLog`] from verified Events only), together with the position it stands
//! at and, while time travelling, the Event it is pinned to ([`Snapshot::as_of`]).
//! [`Console::viewer`] is the signed-in human as a `views::Viewer` (`None` while no key is
//! unlocked). [`Console::view_now`] is the instant the views compare leases and deadlines with:
//! the clock when live, the pinned Event's `occurredAt` when time travelling.
//! [`Console::rejections`] holds the rejections the human's own Commands received (rejections
//! are not Events, §15.3): the write side pushes them, the approval inbox and the ledger read
//! them. So an approvals view is
//! `console.snapshot.with(|s| ApprovalInbox::build(&s.state, &viewer, &rejections, now))`
//! with `viewer = console.viewer.get()?` and `now = console.view_now()`; nothing in the UI
//! re-implements a protocol rule.

use crate::alarms::{Alarms, Cause, Occurrence};
use crate::commands::{Author, Outcome, Receipt, ReceiptError, SignedCommand};
use crate::fold::{AsOf, EventLog, Progress, Travel};
use crate::socket::machine::{Output, Status};
use leptos::prelude::*;
use std::sync::Arc;
use wasm_core::authority::Micros;
use wasm_core::authority::state::State;
use wasm_core::crypto::ed25519::Signer;
use wasm_core::crypto::registry::ValidatedRegistry;
use wasm_core::json::Value;
use wasm_core::model::common::{Actor, ActorType};
use wasm_core::model::error::ProtocolError;
use wasm_core::views::{SeenRejection, Viewer};

/// The colour theme. `System` follows `prefers-color-scheme`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Theme {
    System,
    Light,
    Dark,
}

impl Theme {
    pub const STORAGE_KEY: &'static str = "missionweave.console.theme";

    pub fn as_str(self) -> &'static str {
        match self {
            Theme::System => "system",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }

    pub fn parse(s: &str) -> Theme {
        match s {
            "light" => Theme::Light,
            "dark" => Theme::Dark,
            _ => Theme::System,
        }
    }
}

/// One Event as the Events view shows it: verified (with its signing hash) or rejected.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRow {
    pub event_id: String,
    pub group_id: Option<String>,
    pub sequence: Option<u64>,
    pub kind: String,
    pub occurred_at: String,
    pub signing_hash: Option<String>,
    /// The wire code and reason of a failed verification.
    pub rejected: Option<(String, String)>,
}

/// The key held by this browser.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyState {
    /// Not yet read from IndexedDB.
    Loading,
    /// No key stored.
    None,
    /// A key file is stored; the passphrase is needed.
    Locked {
        principal_id: String,
        key_id: String,
    },
    /// Unlocked: a `Signer` is held in memory.
    Unlocked {
        principal_id: String,
        key_id: String,
    },
    /// Nobody signed in, and the static demo's console reads the demo with its visitor key
    /// (docs/static-demo.md, "Visitor view"): a read-only session of the demo's human, whose
    /// key the Registry does not bind. No `Signer` is held (`Console::signer` stays empty):
    /// every decision asks to sign in.
    Visiting {
        principal_id: String,
        key_id: String,
    },
}

/// Where the Registry used for verification stands.
#[derive(Clone, Debug, PartialEq)]
pub enum RegistryState {
    Loading,
    Ready {
        bindings: usize,
        /// The served Registry's `organizationId`: the development one has the demo's humans.
        organization_id: String,
    },
    Unavailable(String),
}

/// The development Organization's id (`GET /api/registry` on a development server): only there
/// does the console name the demo's humans and point to the join link.
pub const DEV_ORGANIZATION: &str = "urn:missionweaveprotocol:organization:dev";

impl RegistryState {
    /// Whether the served Registry is the development Organization's.
    pub fn is_dev(&self) -> bool {
        matches!(self, RegistryState::Ready { organization_id, .. } if organization_id == DEV_ORGANIZATION)
    }
}

/// The Groups the signed-in human may read, as the development Organization lists them
/// (`GET /api/groups/…`, signed): an empty list means no Membership yet, which the board
/// says (a loading or failed list says nothing of Membership).
#[derive(Clone, Debug, PartialEq)]
pub enum GroupsState {
    Loading,
    Listed(Vec<String>),
    Failed(String),
}

/// The replayed protocol state the views render (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The state after [`Snapshot::position`] verified Events.
    pub state: Arc<State>,
    /// Live: Events folded. Time travelling: Events of the merged log up to the pinned one.
    pub position: usize,
    /// `Some` while time travelling: the Event the views are pinned to.
    pub as_of: Option<AsOf>,
}

impl PartialEq for Snapshot {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
            && self.position == other.position
            && self.as_of == other.as_of
    }
}

/// How a Command travelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// A `COMMAND` frame on the live session (re-sent unchanged after a reconnect).
    Socket,
    /// `POST /api/commands` (the socket was down).
    Http,
    /// `POST /api/commands` by design: a `mission.create`, whose Events are in a Group this
    /// human does not follow yet.
    HttpCreate,
}

/// Where a sent Command stands.
#[derive(Clone, Debug, PartialEq)]
pub enum SentState {
    /// Sent; no outcome yet (held for the next session when the socket is down).
    Waiting,
    /// Accepted: its Events and the stored Approval, verified again in this browser.
    Accepted(Receipt),
    /// Refused by the authority: the wire error.
    Refused(ProtocolError),
    /// Accepted, but the receipt did not verify (an alarm is raised too).
    Untrusted(ReceiptError),
    /// The request itself failed (network); the same bytes may be sent again.
    Failed(String),
}

/// One of the human's Commands and its outcome, matched by Action ID.
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    /// The inbox item it decides (`commands::item_key`).
    pub item: String,
    pub command: SignedCommand,
    pub author: Author,
    pub via: Via,
    pub state: SentState,
    /// The Events received so far for it (the receipt is verified over all of them).
    pub events: Vec<Value>,
}

#[derive(Clone, Copy)]
pub struct Console {
    pub theme: RwSignal<Theme>,
    pub status: RwSignal<Status>,
    pub events: RwSignal<Vec<EventRow>>,
    /// Open gaps: (Group, first missing, last missing).
    pub gaps: RwSignal<Vec<(String, u64, u64)>>,
    /// Grouped by cause (`crate::alarms`), each bounded.
    pub alarms: RwSignal<Alarms>,
    /// Reducer refusals already raised (a dismissed alarm is not raised again for them).
    refusals_reported: StoredValue<usize>,
    pub key: RwSignal<KeyState>,
    pub registry: RwSignal<RegistryState>,
    pub shortcuts_open: RwSignal<bool>,
    pub exact_times: RwSignal<bool>,
    /// The unlocked key (never serialized, never sent; dropped on lock).
    pub signer: StoredValue<Option<Arc<Signer>>>,
    /// The replayed protocol state (module documentation).
    pub snapshot: RwSignal<Snapshot>,
    /// The signed-in human, as the views' `Viewer` (`None` without an unlocked key).
    pub viewer: Memo<Option<Viewer>>,
    /// The rejections the human's own Commands received (pushed by the write side).
    pub rejections: RwSignal<Vec<SeenRejection>>,
    /// The first replay's (or any backlog's) folding progress.
    pub progress: RwSignal<Progress>,
    /// The clock, ticking once a second (lease countdowns, overdue deadlines).
    pub clock: RwSignal<Micros>,
    /// The verified Events and the live fold (not reactive itself: `snapshot` and `progress`
    /// announce its changes).
    pub log: StoredValue<EventLog>,
    /// Time travel over the merged log, built when first used and dropped on return to live.
    pub travel: StoredValue<Option<Travel>>,
    /// A fold task is running (browser): new Events join it instead of starting another.
    folding: StoredValue<bool>,
    /// Socket frames held for the Worker pool, not yet verified (counted by the progress bar).
    held: StoredValue<usize>,
    /// The Registry evidence the receipts of our Commands are verified against.
    pub verifier: StoredValue<Option<ValidatedRegistry>>,
    /// The human's Commands, newest last, with their outcomes.
    pub outbox: RwSignal<Vec<Sent>>,
    /// The Groups the signed-in human may read (the session's poll).
    pub groups: RwSignal<GroupsState>,
    /// Set when the server refused this browser's key and the Registry says why: revoked,
    /// ended, or not there (issue 26: the person is told so and offered a way back).
    pub key_standing: RwSignal<Option<KeyStanding>>,
    /// Set when the static demo's visitor key document was refused (`custody::demo::read_visitor`,
    /// docs/static-demo.md "Visitor view"): no read-only session opened, and the header says
    /// why and that signing in still works.
    pub visitor_refused: RwSignal<Option<crate::custody::demo::VisitorError>>,
}

/// Why the Registry no longer accepts a key this browser holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyStanding {
    /// `revokedAt` (or `validUntil`) is at or before now: what it signed before still verifies.
    Ended {
        key_id: String,
        at: String,
        revoked: bool,
    },
    /// The Registry has no binding for the key (never enrolled, or another Organization).
    Unknown { key_id: String },
}

/// The standing of `key_id` in `registry` at `now` (RFC 3339, whole seconds): `None` while it
/// is valid.
pub fn key_standing(
    registry: &wasm_core::crypto::registry::ValidatedRegistry,
    key_id: &str,
    now: &str,
) -> Option<KeyStanding> {
    let Some(b) = registry.binding(key_id) else {
        return Some(KeyStanding::Unknown {
            key_id: key_id.to_owned(),
        });
    };
    let t = wasm_core::time::Timestamp::parse_profile(now).ok()?;
    if b.valid_at(t.instant()) {
        return None;
    }
    let (at, revoked) = match (&b.revoked_at, &b.valid_until) {
        (Some(r), Some(u)) if u.instant() < r.instant() => (u.as_str().to_owned(), false),
        (Some(r), _) => (r.as_str().to_owned(), true),
        (None, Some(u)) => (u.as_str().to_owned(), false),
        // Not valid yet: treat as unknown for now.
        (None, None) => {
            return Some(KeyStanding::Unknown {
                key_id: key_id.to_owned(),
            });
        }
    };
    Some(KeyStanding::Ended {
        key_id: key_id.to_owned(),
        at,
        revoked,
    })
}

/// Events folded per step of a backlog; the page yields to the event loop between steps.
pub const FOLD_CHUNK: usize = 250;

impl Console {
    pub fn new() -> Console {
        let key = RwSignal::new(KeyState::Loading);
        let viewer = Memo::new(move |_| match key.get() {
            // The visitor reads what the human may read: the same views, each decision
            // asking to sign in.
            KeyState::Unlocked { principal_id, .. } | KeyState::Visiting { principal_id, .. } => {
                Some(Viewer::Principal(Actor::new(
                    ActorType::Human,
                    &principal_id,
                )))
            }
            _ => None,
        });
        Console {
            theme: RwSignal::new(Theme::System),
            status: RwSignal::new(Status::Idle),
            events: RwSignal::new(Vec::new()),
            gaps: RwSignal::new(Vec::new()),
            alarms: RwSignal::new(Alarms::default()),
            refusals_reported: StoredValue::new(0),
            key,
            registry: RwSignal::new(RegistryState::Loading),
            shortcuts_open: RwSignal::new(false),
            exact_times: RwSignal::new(false),
            signer: StoredValue::new(None),
            snapshot: RwSignal::new(Snapshot::default()),
            viewer,
            rejections: RwSignal::new(Vec::new()),
            progress: RwSignal::new(Progress::default()),
            clock: RwSignal::new(crate::web::now()),
            log: StoredValue::new(EventLog::new()),
            travel: StoredValue::new(None),
            folding: StoredValue::new(false),
            held: StoredValue::new(0),
            verifier: StoredValue::new(None),
            outbox: RwSignal::new(Vec::new()),
            groups: RwSignal::new(GroupsState::Loading),
            key_standing: RwSignal::new(None),
            visitor_refused: RwSignal::new(None),
        }
    }

    /// The unlocked key's signer and key ID, for a signed read; `None` without an unlocked key.
    pub fn credentials(&self) -> Option<(Arc<Signer>, String)> {
        let KeyState::Unlocked { key_id, .. } = self.key.get_untracked() else {
            return None;
        };
        let signer = self.signer.with_value(Option::clone)?;
        Some((signer, key_id))
    }

    /// Records a Command that is being sent (its outcome is matched by Action ID later).
    pub fn record_sent(&self, item: String, command: SignedCommand, author: Author, via: Via) {
        self.outbox.update(|o| {
            o.retain(|s| s.command.action_id != command.action_id);
            o.push(Sent {
                item,
                command,
                author,
                via,
                state: SentState::Waiting,
                events: Vec::new(),
            })
        });
    }

    /// Applies an outcome to the Command with `action_id`: Events are verified again as a
    /// receipt (with the stored Approval), a refusal is kept with its wire error and becomes a
    /// rejection the views read.
    pub fn settle(&self, action_id: &str, outcome: Outcome) {
        let at = self.clock.get_untracked();
        let mut rejection = None;
        let mut alarm: Option<Occurrence> = None;
        self.outbox.update(|o| {
            let Some(s) = o.iter_mut().find(|s| s.command.action_id == action_id) else {
                return;
            };
            match outcome {
                Outcome::Accepted { events, .. } => {
                    for e in events {
                        let id = e.pointer("/eventId").cloned();
                        if !s
                            .events
                            .iter()
                            .any(|x| x.pointer("/eventId").cloned() == id)
                        {
                            s.events.push(e);
                        }
                    }
                    let verified = self.verifier.with_value(|r| match r {
                        Some(r) => crate::commands::verify_receipt(&s.command, &s.events, r),
                        None => Err(ReceiptError::Empty),
                    });
                    s.state = match verified {
                        Ok(r) => SentState::Accepted(r),
                        Err(e) => {
                            alarm = Some(Occurrence {
                                group_id: s.events.first().and_then(|e| {
                                    e.pointer("/groupId")
                                        .and_then(Value::as_str)
                                        .map(str::to_owned)
                                }),
                                event_id: s.events.first().and_then(|e| {
                                    e.pointer("/eventId")
                                        .and_then(Value::as_str)
                                        .map(str::to_owned)
                                }),
                                reason: format!("{}: {e:?}", s.command.action_id),
                                ..Occurrence::default()
                            });
                            SentState::Untrusted(e)
                        }
                    };
                }
                Outcome::Refused(e) => {
                    rejection = Some(crate::commands::seen_rejection(
                        &s.command, &s.author, &e, at,
                    ));
                    s.state = SentState::Refused(*e);
                }
            }
        });
        if let Some(r) = rejection {
            self.rejections.update(|v| v.push(r));
        }
        if let Some(what) = alarm {
            self.raise(Cause::ReceiptUnverified, what);
        }
    }

    /// A network failure of the HTTP path (the socket path never fails this way: it waits).
    pub fn fail(&self, action_id: &str, detail: String) {
        self.outbox.update(|o| {
            if let Some(s) = o.iter_mut().find(|s| s.command.action_id == action_id) {
                s.state = SentState::Failed(detail);
            }
        });
    }

    /// Publishes the live fold as the views' snapshot (not while time travelling: the pinned
    /// past does not change; the travel log is rebuilt on the next pick).
    fn publish(&self) {
        self.travel.set_value(None);
        if self.snapshot.with_untracked(|s| s.as_of.is_some()) {
            return;
        }
        let (state, position) = self
            .log
            .with_value(|l| (Arc::new(l.state().clone()), l.progress().folded));
        self.snapshot.set(Snapshot {
            state,
            position,
            as_of: None,
        });
    }

    /// Folds pending Events: in chunks of [`FOLD_CHUNK`] with a yield to the event loop between
    /// them in the browser (a large replay never freezes the page, and the progress bar moves),
    /// all at once natively.
    fn schedule_fold(&self) {
        let console = *self;
        #[cfg(target_arch = "wasm32")]
        {
            if self.folding.get_value() {
                return;
            }
            self.folding.set_value(true);
            leptos::task::spawn_local(async move {
                loop {
                    crate::web::yield_now().await;
                    let mut n = 0;
                    console.log.update_value(|l| n = l.fold(FOLD_CHUNK));
                    console.refresh_progress();
                    if n == 0 {
                        break;
                    }
                }
                console.publish();
                console.refusal_alarms();
                console.folding.set_value(false);
            });
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            let _ = &self.folding;
            console
                .log
                .update_value(|l| while l.fold(FOLD_CHUNK) > 0 {});
            console.refresh_progress();
            console.publish();
            console.refusal_alarms();
        }
    }

    /// The progress bar: Events folded of those known, the socket's frames held for the Worker
    /// pool counted as known and not yet folded.
    fn refresh_progress(&self) {
        let mut p = self.log.with_value(EventLog::progress);
        p.known += self.held.get_value();
        self.progress.set(p);
    }

    /// How many socket frames the Worker pool holds (the socket client reports each change).
    pub fn set_held(&self, n: usize) {
        if self.held.get_value() != n {
            self.held.set_value(n);
            self.refresh_progress();
        }
    }

    /// Raises an alarm for each Event the reducer refused that was not reported yet.
    fn refusal_alarms(&self) {
        let reported = self.refusals_reported.get_value();
        let fresh: Vec<_> = self
            .log
            .with_value(|l| l.refusals().iter().skip(reported).cloned().collect());
        self.refusals_reported
            .set_value(reported.saturating_add(fresh.len()));
        for r in fresh {
            let (group_id, sequence, signer) = self.log.with_value(|l| {
                l.folded_events()
                    .get(r.position)
                    .map(|e| {
                        let s = |p: &str| e.pointer(p).and_then(Value::as_str).map(str::to_owned);
                        let seq = e.pointer("/sequence").and_then(|v| match v {
                            Value::Number(n) => n.as_safe_u64(),
                            _ => None,
                        });
                        (s("/groupId"), seq, s("/signature/keyId"))
                    })
                    .unwrap_or_default()
            });
            self.raise(
                Cause::ReplayRefused,
                Occurrence {
                    group_id,
                    sequence,
                    event_id: Some(r.event_id.clone()),
                    signer,
                    reason: r.reason.clone(),
                },
            );
        }
    }

    /// Pins every view to the state just after Event `event_id` (time travel, replayed by the
    /// reducer over the merged log). Returns false if the Event is not in the folded log.
    pub fn travel_to(&self, event_id: &str) -> bool {
        let mut travel = self
            .travel
            .try_update_value(Option::take)
            .flatten()
            .unwrap_or_else(|| self.log.with_value(Travel::new));
        let picked = travel.select(event_id);
        self.travel.set_value(Some(travel));
        match picked {
            Ok((as_of, state)) => {
                self.snapshot.set(Snapshot {
                    state: Arc::new(state),
                    position: as_of.position,
                    as_of: Some(as_of),
                });
                true
            }
            Err(_) => false,
        }
    }

    /// Leaves time travel: the views show the live fold again.
    pub fn back_to_live(&self) {
        self.snapshot.update(|s| s.as_of = None);
        self.publish();
    }

    /// The instant the views measure leases and deadlines against: the clock when live, the
    /// pinned Event's `occurredAt` while time travelling.
    pub fn view_now(&self) -> Micros {
        match self.snapshot.with(|s| s.as_of.as_ref().map(|a| a.at)) {
            Some(at) => at,
            None => self.clock.get(),
        }
    }

    /// Whether the views show a past state.
    pub fn travelling(&self) -> bool {
        self.snapshot.with(|s| s.as_of.is_some())
    }

    /// After the server refused this browser's key: fetches the Registry again and, if it no
    /// longer accepts the key, says why (`key_standing`) and stops the session, which would be
    /// refused over and over. Returns whether a check was started (a key is unlocked).
    /// `said`: the server's own words, raised as the alarm when the Registry says nothing.
    fn check_key_standing(&self, cause: Cause, said: String) -> bool {
        let KeyState::Unlocked { key_id, .. } = self.key.get_untracked() else {
            return false;
        };
        #[cfg(target_arch = "wasm32")]
        {
            let console = *self;
            leptos::task::spawn_local(async move {
                let standing = match crate::web::get_bytes("/api/registry").await {
                    Ok(bytes) => crate::components::registry::parse(&bytes)
                        .ok()
                        .and_then(|r| {
                            key_standing(&r, &key_id, &crate::web::now().format_whole_seconds())
                        }),
                    Err(_) => None,
                };
                match standing {
                    Some(s) => {
                        crate::socket::page::stop();
                        console.key_standing.set(Some(s));
                    }
                    None => console.raise(cause, Occurrence::said(said)),
                }
            });
        }
        #[cfg(not(target_arch = "wasm32"))]
        let _ = (key_id, cause, said);
        true
    }

    /// Raises an alarm with a wire code and words only (grouped under the code).
    pub fn alarm(&self, code: String, detail: String) {
        self.raise(Cause::Other { code }, Occurrence::said(detail));
    }

    /// Counts `what` under its cause's alarm (`crate::alarms`: one banner per cause).
    pub fn raise(&self, cause: Cause, what: Occurrence) {
        self.alarms.update(|a| a.raise(cause, what));
    }

    /// Applies the socket client's notices to the views' state.
    pub fn apply(&self, notices: Vec<Output>) {
        let mut fold = false;
        for n in notices {
            let alarm = crate::alarms::of_output(&n);
            match n {
                Output::Status(s) => self.status.set(s),
                Output::Deliver(d) => {
                    let mut new = false;
                    self.log.update_value(|l| new = l.push(d.value));
                    if new {
                        self.events.update(|e| {
                            e.push(EventRow {
                                event_id: d.event_id,
                                group_id: d.group_id,
                                sequence: d.sequence,
                                kind: d.kind,
                                occurred_at: d.occurred_at,
                                signing_hash: Some(d.signing_hash),
                                rejected: None,
                            })
                        });
                        fold = true;
                    }
                }
                Output::Rejected(r) => {
                    let code = r.code.as_str().to_owned();
                    self.events.update(|e| {
                        e.push(EventRow {
                            event_id: r.event_id.clone().unwrap_or_default(),
                            group_id: r.group_id.clone(),
                            sequence: r.sequence,
                            kind: String::new(),
                            occurred_at: String::new(),
                            signing_hash: None,
                            rejected: Some((code.clone(), r.reason.clone())),
                        })
                    });
                    if let Some((cause, what)) = alarm {
                        self.raise(cause, what);
                    }
                }
                Output::Gap { group_id, from, to } => self.gaps.update(|g| {
                    g.retain(|(x, _, _)| *x != group_id);
                    g.push((group_id, from, to));
                }),
                Output::GapClosed { group_id } => {
                    self.gaps.update(|g| g.retain(|(x, _, _)| *x != group_id))
                }
                Output::ServerError(e) | Output::HandshakeRefused(e) => {
                    let Some((cause, what)) = alarm else { continue };
                    if e.code == wasm_core::model::error::ErrorCode::AuthInvalidSignature
                        && self.check_key_standing(cause.clone(), what.reason.clone())
                    {
                        // Told by the key's own banner once the Registry says why.
                        continue;
                    }
                    self.raise(cause, what)
                }
                Output::BadFrame { .. } => {
                    if let Some((cause, what)) = alarm {
                        self.raise(cause, what);
                    }
                }
                Output::CommandEvent { action_id, event } => self.settle(
                    &action_id,
                    Outcome::Accepted {
                        events: vec![event.value],
                        duplicate: false,
                    },
                ),
                Output::CommandRefused { action_id, error } => {
                    self.settle(&action_id, Outcome::Refused(Box::new(error)))
                }
                Output::Open | Output::Send(_) | Output::Close | Output::SignChallenge(_) => {}
            }
        }
        if fold {
            self.refresh_progress();
            self.schedule_fold();
        }
    }
}

impl Default for Console {
    fn default() -> Self {
        Console::new()
    }
}

/// Applies a theme to `<html data-theme>` and remembers it.
pub fn apply_theme(t: Theme) {
    let effective = match t {
        Theme::System => {
            if crate::web::prefers_dark() {
                "dark"
            } else {
                "light"
            }
        }
        Theme::Light => "light",
        Theme::Dark => "dark",
    };
    crate::web::set_root_attr("data-theme", effective);
}

/// Flips between light and dark from whatever is shown now.
pub fn toggle_theme(console: Console) {
    let dark_now = match console.theme.get_untracked() {
        Theme::Dark => true,
        Theme::Light => false,
        Theme::System => crate::web::prefers_dark(),
    };
    let t = if dark_now { Theme::Light } else { Theme::Dark };
    console.theme.set(t);
    crate::web::local_set(Theme::STORAGE_KEY, t.as_str());
}

pub fn use_console() -> Console {
    expect_context::<Console>()
}

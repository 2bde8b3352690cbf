//! The console-wide reactive state, provided as a context by the shell.

use crate::socket::machine::{Output, Status};
use leptos::prelude::*;
use std::sync::Arc;
use wasm_core::crypto::ed25519::Signer;

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

/// A visible alarm (an Event that failed verification, a server error).
#[derive(Clone, Debug, PartialEq)]
pub struct Alarm {
    pub id: u64,
    pub code: String,
    pub detail: String,
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
}

/// Where the Registry used for verification stands.
#[derive(Clone, Debug, PartialEq)]
pub enum RegistryState {
    Loading,
    Ready { bindings: usize },
    Unavailable(String),
}

#[derive(Clone, Copy)]
pub struct Console {
    pub theme: RwSignal<Theme>,
    pub status: RwSignal<Status>,
    pub events: RwSignal<Vec<EventRow>>,
    /// Open gaps: (Group, first missing, last missing).
    pub gaps: RwSignal<Vec<(String, u64, u64)>>,
    pub alarms: RwSignal<Vec<Alarm>>,
    pub key: RwSignal<KeyState>,
    pub registry: RwSignal<RegistryState>,
    pub shortcuts_open: RwSignal<bool>,
    pub exact_times: RwSignal<bool>,
    /// The unlocked key (never serialized, never sent; dropped on lock).
    pub signer: StoredValue<Option<Arc<Signer>>>,
}

impl Console {
    pub fn new() -> Console {
        Console {
            theme: RwSignal::new(Theme::System),
            status: RwSignal::new(Status::Idle),
            events: RwSignal::new(Vec::new()),
            gaps: RwSignal::new(Vec::new()),
            alarms: RwSignal::new(Vec::new()),
            key: RwSignal::new(KeyState::Loading),
            registry: RwSignal::new(RegistryState::Loading),
            shortcuts_open: RwSignal::new(false),
            exact_times: RwSignal::new(false),
            signer: StoredValue::new(None),
        }
    }

    pub fn alarm(&self, code: String, detail: String) {
        self.alarms.update(|a| {
            let id = a.last().map_or(1, |x| x.id + 1);
            a.push(Alarm { id, code, detail });
        });
    }

    /// Applies the socket client's notices to the views' state.
    pub fn apply(&self, notices: Vec<Output>) {
        for n in notices {
            match n {
                Output::Status(s) => self.status.set(s),
                Output::Deliver(d) => self.events.update(|e| {
                    e.push(EventRow {
                        event_id: d.event_id,
                        group_id: d.group_id,
                        sequence: d.sequence,
                        kind: d.kind,
                        occurred_at: d.occurred_at,
                        signing_hash: Some(d.signing_hash),
                        rejected: None,
                    })
                }),
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
                    self.alarm(code, r.reason);
                }
                Output::Gap { group_id, from, to } => self.gaps.update(|g| {
                    g.retain(|(x, _, _)| *x != group_id);
                    g.push((group_id, from, to));
                }),
                Output::GapClosed { group_id } => {
                    self.gaps.update(|g| g.retain(|(x, _, _)| *x != group_id))
                }
                Output::ServerError(e) => {
                    self.alarm(e.code.as_str().to_owned(), e.message.0.clone())
                }
                Output::BadFrame { code, message } => self.alarm(code.as_str().to_owned(), message),
                Output::Open | Output::Send(_) | Output::Close | Output::SignChallenge(_) => {}
            }
        }
    }
}

impl Default for Console {
    fn default() -> Self {
        Console::new()
    }
}

pub fn use_console() -> Console {
    expect_context::<Console>()
}

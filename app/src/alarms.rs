//! Alarms a person can read (issue 29): grouped by cause with a count, each group naming what
//! failed (Group, sequence, Event ID, signer) for at most [`MAX_DETAILS`] of its occurrences.
//! Forty-one tampered Events are one alarm, "41 Events failed verification", not forty-one
//! banners; a refused handshake or a lost connection is said as what it is, never as an Event
//! failing verification. Logic only (no DOM): `app::Alarms` draws it, `app/tests/alarms.rs`
//! tests it natively.

use crate::socket::machine::Output;

/// Occurrences named in one cause's alarm; beyond it only the count grows (a stream of
/// tampered Events cannot grow the page or the memory without bound).
pub const MAX_DETAILS: usize = 8;

/// Causes shown at once; occurrences of further causes are only counted ([`Alarms::overflow`]).
pub const MAX_CAUSES: usize = 16;

/// The alarm code of an Event the reducer refused (never expected from a verified, gap-free
/// stream; shown rather than hidden).
pub const REDUCER_REFUSED: &str = "REPLAY_REFUSED";

/// What went wrong, which decides the alarm's wording and what its occurrences are grouped by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// An Event failed verification (§6.4) with this wire code: shown, never applied.
    EventRejected { code: String },
    /// A verified Event the reducer refused (never expected from a gap-free stream, §5).
    ReplayRefused,
    /// One of our Commands was accepted but its Events do not verify as its receipt (§15.1).
    ReceiptUnverified,
    /// The server refused the handshake (an `ERROR` before `HELLO_SERVER_ACCEPT`, §10.1).
    HandshakeRefused { code: String },
    /// The server ended a live connection with an `ERROR` frame (§19).
    ConnectionEnded { code: String },
    /// The server sent a frame that is not strict JSON or not a frame (§17.4): connection closed.
    BadFrame { code: String },
    /// The Registry could not be fetched: nothing can be verified until it is.
    RegistryUnavailable,
    /// Anything else raised with a wire code.
    Other { code: String },
}

impl Cause {
    /// The wire code the cause carries, if any.
    pub fn code(&self) -> Option<&str> {
        match self {
            Cause::EventRejected { code }
            | Cause::HandshakeRefused { code }
            | Cause::ConnectionEnded { code }
            | Cause::BadFrame { code }
            | Cause::Other { code } => Some(code),
            Cause::ReplayRefused => Some(REDUCER_REFUSED),
            Cause::ReceiptUnverified | Cause::RegistryUnavailable => None,
        }
    }

    /// Whether its occurrences are Events (each named and linked to its row).
    pub fn about_events(&self) -> bool {
        matches!(
            self,
            Cause::EventRejected { .. } | Cause::ReplayRefused | Cause::ReceiptUnverified
        )
    }
}

/// One occurrence: what failed, as far as it is known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Occurrence {
    pub group_id: Option<String>,
    pub sequence: Option<u64>,
    pub event_id: Option<String>,
    /// The `signature.keyId` the Event claims.
    pub signer: Option<String>,
    /// The verifier's or the server's own words.
    pub reason: String,
}

impl Occurrence {
    /// An occurrence known only by its words (a server's message).
    pub fn said(reason: impl Into<String>) -> Occurrence {
        Occurrence {
            reason: reason.into(),
            ..Occurrence::default()
        }
    }
}

/// The alarm of one cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CauseAlarm {
    /// Stable while the alarm stays (the banner's key, its dismiss button).
    pub id: u64,
    pub cause: Cause,
    /// Every occurrence since it was raised (or last dismissed).
    pub count: u64,
    /// The first [`MAX_DETAILS`] occurrences (a repeated one, same Event and words, once).
    pub details: Vec<Occurrence>,
}

impl CauseAlarm {
    /// Occurrences counted but not named.
    pub fn unnamed(&self) -> u64 {
        self.count.saturating_sub(self.details.len() as u64)
    }
}

/// The alarms, one per cause, in the order their causes first occurred.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Alarms {
    causes: Vec<CauseAlarm>,
    next_id: u64,
    /// Occurrences of causes beyond [`MAX_CAUSES`].
    pub overflow: u64,
}

impl Alarms {
    /// Counts `what` under `cause`, naming it if the cause names fewer than [`MAX_DETAILS`].
    pub fn raise(&mut self, cause: Cause, what: Occurrence) {
        if let Some(a) = self.causes.iter_mut().find(|a| a.cause == cause) {
            a.count = a.count.saturating_add(1);
            if a.details.len() < MAX_DETAILS && !a.details.contains(&what) {
                a.details.push(what);
            }
            return;
        }
        if self.causes.len() >= MAX_CAUSES {
            self.overflow = self.overflow.saturating_add(1);
            return;
        }
        self.next_id += 1;
        self.causes.push(CauseAlarm {
            id: self.next_id,
            cause,
            count: 1,
            details: vec![what],
        });
    }

    /// Removes the alarm `id` (the person read it); a new occurrence raises it again.
    pub fn dismiss(&mut self, id: u64) {
        self.causes.retain(|a| a.id != id);
    }

    pub fn causes(&self) -> &[CauseAlarm] {
        &self.causes
    }

    pub fn is_empty(&self) -> bool {
        self.causes.is_empty() && self.overflow == 0
    }
}

/// The Events view's address of Event `event_id`: the view scrolls to its row and marks it
/// (`routes::events`). The id is percent-encoded (an Event ID is any string the schema admits).
pub fn event_link(event_id: &str) -> String {
    format!(
        "/events?event={}",
        wasm_core::encoding::url_component(event_id)
    )
}

/// The alarm an output of the socket client raises, if any (`Console::apply`): an Event that
/// failed verification names its Group, sequence, Event ID and signer; an `ERROR` before the
/// handshake's acceptance is a refused handshake, after it an ended connection; a broken frame
/// a closed connection. None of them is ever worded as another.
pub fn of_output(o: &Output) -> Option<(Cause, Occurrence)> {
    match o {
        Output::Rejected(r) => Some((
            Cause::EventRejected {
                code: r.code.as_str().to_owned(),
            },
            Occurrence {
                group_id: r.group_id.clone(),
                sequence: r.sequence,
                event_id: r.event_id.clone(),
                signer: r.signer.clone(),
                reason: r.reason.clone(),
            },
        )),
        Output::HandshakeRefused(e) => Some((
            Cause::HandshakeRefused {
                code: e.code.as_str().to_owned(),
            },
            Occurrence::said(e.message.0.clone()),
        )),
        Output::ServerError(e) => Some((
            Cause::ConnectionEnded {
                code: e.code.as_str().to_owned(),
            },
            Occurrence::said(e.message.0.clone()),
        )),
        Output::BadFrame { code, message } => Some((
            Cause::BadFrame {
                code: code.as_str().to_owned(),
            },
            Occurrence::said(message.clone()),
        )),
        _ => None,
    }
}

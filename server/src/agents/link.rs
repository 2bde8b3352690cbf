//! One demo Agent's connection to the binding (§17), as any external Agent holds it: the
//! Agent's own `HELLO` (its key signs the server's challenge; the server opens its Session,
//! §6.3), `SUBSCRIBE` with replay (§16, §17.2), signed `COMMAND`s, the `EVENT`s that come
//! back, and `ACK`s of the Agent's Cursors.
//!
//! When the socket drops (or the demo drops it on purpose), the link reconnects with backoff,
//! says `HELLO` again (a new Session Epoch, which fences the old one and revokes its Execution
//! Leases, §6.3, §11.3) and resumes every Group from its **ACKed** Cursor, so the Events around
//! the cut come again and the Agent's inbox drops them (at-least-once, §16). Commands that
//! were in flight are sent again unchanged: an accepted one is answered with its original
//! Events (an exact retry, §15.1), an unaccepted one by the authority's refusal.
//!
//! No receipt frame exists in 0.1 (docs/binding.md): an outcome is the refusal `ERROR` naming
//! the Action ID, or the Command's own `EVENT`s (`cause.id`); those that arrive together are
//! the outcome. An accepted Command that gives its sender no frame is read, after a quiet
//! while, from the exact-retry receipt of `POST /api/commands` (as `scenarios --url` does).

use crate::endpoint::Endpoint;
use crate::gateway::client::{Client, Incoming};
use futures_util::FutureExt;
use simulation::agents::Outcome;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use wasm_core::crypto::ed25519::Signer;
use wasm_core::json::{self, Value};
use wasm_core::model::error::ErrorCode;

/// How long an accepted-or-not Command may go without any answer on the socket before its
/// receipt is read over HTTP (the authority answers within milliseconds; this only bounds
/// the wait for a Command whose Events the sender does not receive).
const QUIET: Duration = Duration::from_secs(3);

/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Who the link speaks for and where.
pub struct LinkSpec {
    pub agent: String,
    /// Which connection of this Agent (a restarted Agent gets a new link).
    pub link: u64,
    pub principal_id: String,
    pub key_id: String,
    pub signer: Signer,
    pub endpoint: Endpoint,
    /// The demo's request that asked for the Session.
    pub open_id: u64,
}

/// What the runner asks of a link. Dropping the sender ends the link and its socket.
#[derive(Debug)]
pub enum ToLink {
    Command {
        id: u64,
        action_id: String,
        bytes: Vec<u8>,
    },
    /// `SUBSCRIBE` one Group after a sequence (also the Group's resume point from now on).
    Subscribe { group: String, after: u64 },
    /// `ACK` these Cursors; they become the resume points.
    Ack(Vec<(String, u64)>),
    /// Drop the socket now and stay away this long (a network fault the demo injects).
    Disconnect(Duration),
}

/// What a link reports.
#[derive(Debug)]
pub enum FromLink {
    /// The first `HELLO`: the Session Epoch, or why there is none.
    Opened {
        open_id: u64,
        epoch: Result<u64, String>,
    },
    /// Back after a drop: the new Session Epoch, and the Groups resumed after these Cursors.
    Reconnected {
        epoch: u64,
        resumed: Vec<(String, u64)>,
    },
    /// One `EVENT`'s Event, as JSON text.
    Event(Vec<u8>),
    /// The outcome of a `Command`.
    Outcome { id: u64, outcome: Outcome },
    /// Something worth a progress line.
    Note(String),
}

/// A report tagged with its link.
#[derive(Debug)]
pub struct Report {
    pub agent: String,
    pub link: u64,
    pub what: FromLink,
}

struct Pending {
    id: u64,
    action_id: String,
    bytes: Vec<u8>,
    /// When it was last sent (`None`: waiting for a connection).
    sent_at: Option<Instant>,
    events: Vec<Value>,
}

#[derive(Default)]
struct State {
    /// Group → where to resume (the last `SUBSCRIBE` point, raised by each `ACK`).
    resume: BTreeMap<String, u64>,
    pending: Vec<Pending>,
    /// Accepted Action IDs and the Event IDs they appended (to tell an exact retry's
    /// answer, which repeats them, from a new acceptance).
    accepted: BTreeMap<String, BTreeSet<String>>,
}

/// Why the connected phase ended.
enum End {
    /// The runner is gone: stop.
    Stop,
    /// The socket dropped; reconnect after this wait.
    Dropped(Duration),
}

struct Io<'a> {
    spec: &'a LinkSpec,
    rx: &'a mut UnboundedReceiver<ToLink>,
    tx: &'a UnboundedSender<Report>,
}

impl Io<'_> {
    fn report(&self, what: FromLink) {
        let _ = self.tx.send(Report {
            agent: self.spec.agent.clone(),
            link: self.spec.link,
            what,
        });
    }
}

/// Runs a link until the runner drops its sender.
pub async fn run(spec: LinkSpec, mut rx: UnboundedReceiver<ToLink>, tx: UnboundedSender<Report>) {
    let io = Io {
        spec: &spec,
        rx: &mut rx,
        tx: &tx,
    };
    let mut st = State::default();
    let mut client = match hello(&spec).await {
        Ok((c, epoch)) => {
            io.report(FromLink::Opened {
                open_id: spec.open_id,
                epoch: Ok(epoch),
            });
            c
        }
        Err(e) => {
            io.report(FromLink::Opened {
                open_id: spec.open_id,
                epoch: Err(e),
            });
            return;
        }
    };
    let mut io = io;
    loop {
        let wait = match connected(&mut io, &mut client, &mut st).await {
            End::Stop => return,
            End::Dropped(wait) => wait,
        };
        drop(client);
        client = match reconnect(&mut io, &mut st, wait).await {
            Some(c) => c,
            None => return,
        };
    }
}

/// A fresh socket and the Agent's `HELLO`; the Session Epoch of `server_accept`.
async fn hello(spec: &LinkSpec) -> Result<(Client, u64), String> {
    let mut c = spec.endpoint.socket(false).await?;
    match tokio::time::timeout(
        Duration::from_secs(30),
        c.hello(&spec.principal_id, &spec.key_id, &spec.signer),
    )
    .await
    {
        Ok(Ok(_)) => c
            .session_epoch
            .map(|e| (c, e))
            .ok_or_else(|| "server_accept without a Session Epoch".to_owned()),
        Ok(Err(v)) => Err(format!(
            "HELLO refused: {}",
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map_or_else(|| json::to_string(&v), str::to_owned)
        )),
        Err(_) => Err("HELLO: no answer".into()),
    }
}

async fn send_command(client: &mut Client, bytes: &[u8]) -> Result<(), String> {
    let frame = client.command_frame(bytes)?;
    client.send(&frame).await
}

/// The connected phase: commands out, frames in, until the socket drops or the runner stops.
async fn connected(io: &mut Io<'_>, client: &mut Client, st: &mut State) -> End {
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            c = io.rx.recv() => {
                let Some(c) = c else { return End::Stop };
                let sent = match c {
                    ToLink::Command { id, action_id, bytes } => {
                        let r = send_command(client, &bytes).await;
                        st.pending.push(Pending {
                            id,
                            action_id,
                            bytes,
                            sent_at: Some(Instant::now()),
                            events: Vec::new(),
                        });
                        r
                    }
                    ToLink::Subscribe { group, after } => {
                        st.resume.insert(group.clone(), after);
                        let f = client.subscribe_frame(&[(group.as_str(), after)]);
                        client.send(&f).await
                    }
                    ToLink::Ack(cursors) => {
                        for (g, s) in &cursors {
                            let r = st.resume.entry(g.clone()).or_default();
                            *r = (*r).max(*s);
                        }
                        let pairs: Vec<(&str, u64)> =
                            cursors.iter().map(|(g, s)| (g.as_str(), *s)).collect();
                        let f = client.ack_frame(&pairs, &crate::runtime::now().format());
                        client.send(&f).await
                    }
                    ToLink::Disconnect(d) => return End::Dropped(d),
                };
                if sent.is_err() {
                    return End::Dropped(Duration::from_millis(250));
                }
            }
            m = client.next() => {
                let Ok(Incoming::Frame(f)) = m else {
                    io.report(FromLink::Note("the connection dropped; reconnecting".into()));
                    return End::Dropped(Duration::from_millis(250));
                };
                let mut resubscribe = on_frame(io, st, &f);
                // Frames already here belong with this one (one durable batch is queued at
                // once): take them before settling outcomes.
                let mut closed = false;
                while let Some(m) = client.next().now_or_never() {
                    match m {
                        Ok(Incoming::Frame(f)) => resubscribe.extend(on_frame(io, st, &f)),
                        _ => {
                            closed = true;
                            break;
                        }
                    }
                }
                settle(io, st);
                for (g, after) in resubscribe {
                    st.resume.insert(g.clone(), after);
                    let f = client.subscribe_frame(&[(g.as_str(), after)]);
                    if client.send(&f).await.is_err() {
                        closed = true;
                    }
                }
                if closed {
                    io.report(FromLink::Note("the connection dropped; reconnecting".into()));
                    return End::Dropped(Duration::from_millis(250));
                }
            }
            _ = tick.tick() => quiet(io, st).await,
        }
    }
}

/// One frame: an Event goes to the runner (and to its Command's outcome), a refusal becomes
/// an outcome. Returns Groups to subscribe again (a `BACKPRESSURE` continuation).
fn on_frame(io: &Io<'_>, st: &mut State, f: &Value) -> Vec<(String, u64)> {
    let s = |p: &str| f.pointer(p).and_then(Value::as_str);
    match s("/frameType") {
        Some("EVENT") => {
            let Some(event) = f.pointer("/event") else {
                return Vec::new();
            };
            io.report(FromLink::Event(json::to_string(event).into_bytes()));
            if let Some(cause) = s("/event/cause/id")
                && let Some(p) = st
                    .pending
                    .iter_mut()
                    .find(|p| p.action_id == cause && p.sent_at.is_some())
            {
                p.events.push(event.clone());
            }
            Vec::new()
        }
        Some("ERROR") => {
            let code = s("/error/code").and_then(ErrorCode::from_wire);
            let message = s("/error/message").unwrap_or_default().to_owned();
            if let Some(action) = s("/error/relatedActionId")
                && let Some(i) = st.pending.iter().position(|p| p.action_id == action)
            {
                let p = st.pending.remove(i);
                io.report(FromLink::Outcome {
                    id: p.id,
                    outcome: Outcome::Rejected {
                        code: code.unwrap_or(ErrorCode::InternalError),
                        message,
                    },
                });
                return Vec::new();
            }
            // A paused Group (replay page done, or a full buffer): resume where it says.
            if code == Some(ErrorCode::Backpressure)
                && let Some(g) = s("/error/groupId")
                && let Some(Value::Number(n)) = f.pointer("/error/details/resumeAfterSequence")
                && let Some(after) = n.as_safe_u64()
            {
                return vec![(g.to_owned(), after)];
            }
            io.report(FromLink::Note(format!(
                "ERROR {}: {message}",
                s("/error/code").unwrap_or("?")
            )));
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// Commands whose own Events arrived get their outcome.
fn settle(io: &Io<'_>, st: &mut State) {
    let (done, rest): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut st.pending)
        .into_iter()
        .partition(|p| !p.events.is_empty());
    st.pending = rest;
    for p in done {
        let ids: BTreeSet<String> = p
            .events
            .iter()
            .filter_map(|e| e.pointer("/eventId").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        // The same Events again for an Action ID already accepted: the exact retry's answer
        // (§15.1, binding.md D-12); nothing was appended.
        let repeated = st
            .accepted
            .get(&p.action_id)
            .is_some_and(|before| ids.is_subset(before));
        let outcome = if repeated {
            Outcome::Duplicate(p.events)
        } else {
            st.accepted.insert(p.action_id.clone(), ids);
            Outcome::Appended(p.events)
        };
        io.report(FromLink::Outcome { id: p.id, outcome });
    }
}

/// A Command without any answer for [`QUIET`]: its receipt, by an exact retry over HTTP.
async fn quiet(io: &Io<'_>, st: &mut State) {
    let now = Instant::now();
    let Some(i) = st
        .pending
        .iter()
        .position(|p| p.sent_at.is_some_and(|t| now.duration_since(t) > QUIET))
    else {
        return;
    };
    let p = st.pending.remove(i);
    let outcome = match io
        .spec
        .endpoint
        .http("POST", "/api/commands", &p.bytes)
        .await
    {
        Ok((200, body)) => {
            let o = super::answer(&String::from_utf8_lossy(&body));
            match &o {
                Outcome::Appended(e) | Outcome::Duplicate(e) => {
                    let ids = e
                        .iter()
                        .filter_map(|e| e.pointer("/eventId").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect();
                    st.accepted.entry(p.action_id.clone()).or_insert(ids);
                }
                Outcome::Rejected { .. } => {}
            }
            o
        }
        Ok((_, body)) => {
            let v = json::parse(&body).ok();
            let at = |ptr: &str| v.as_ref().and_then(|v| v.pointer(ptr)?.as_str());
            Outcome::Rejected {
                code: at("/code")
                    .and_then(ErrorCode::from_wire)
                    .unwrap_or(ErrorCode::InternalError),
                message: at("/message").unwrap_or_default().to_owned(),
            }
        }
        Err(e) => Outcome::Rejected {
            code: ErrorCode::InternalError,
            message: e,
        },
    };
    io.report(FromLink::Note(format!(
        "no frame for {} within {} s; its receipt was read over HTTP",
        p.action_id,
        QUIET.as_secs()
    )));
    io.report(FromLink::Outcome { id: p.id, outcome });
}

/// Away: Commands queue up; after `wait`, a new socket, `HELLO`, and every Group resumed from
/// its ACKed Cursor; queued and unanswered Commands go out again, unchanged. `None`: the
/// runner is gone.
async fn reconnect(io: &mut Io<'_>, st: &mut State, mut wait: Duration) -> Option<Client> {
    loop {
        let until = tokio::time::Instant::now() + wait;
        loop {
            tokio::select! {
                c = io.rx.recv() => match c? {
                    ToLink::Command { id, action_id, bytes } => st.pending.push(Pending {
                        id,
                        action_id,
                        bytes,
                        sent_at: None,
                        events: Vec::new(),
                    }),
                    ToLink::Subscribe { group, after } => {
                        st.resume.insert(group, after);
                    }
                    // Not sent: the resume points stay what the server was told.
                    ToLink::Ack(_) | ToLink::Disconnect(_) => {}
                },
                () = tokio::time::sleep_until(until) => break,
            }
        }
        match hello(io.spec).await {
            Ok((mut c, epoch)) => {
                let resumed: Vec<(String, u64)> =
                    st.resume.iter().map(|(g, s)| (g.clone(), *s)).collect();
                io.report(FromLink::Reconnected {
                    epoch,
                    resumed: resumed.clone(),
                });
                let mut ok = true;
                if !resumed.is_empty() {
                    let pairs: Vec<(&str, u64)> =
                        resumed.iter().map(|(g, s)| (g.as_str(), *s)).collect();
                    let f = c.subscribe_frame(&pairs);
                    ok &= c.send(&f).await.is_ok();
                }
                for p in &mut st.pending {
                    p.events.clear();
                    p.sent_at = Some(Instant::now());
                    ok &= send_command(&mut c, &p.bytes).await.is_ok();
                }
                if ok {
                    return Some(c);
                }
            }
            Err(e) => io.report(FromLink::Note(format!("reconnection failed: {e}"))),
        }
        wait = (wait * 2).clamp(Duration::from_millis(250), MAX_BACKOFF);
    }
}

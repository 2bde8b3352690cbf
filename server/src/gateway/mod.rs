//! The live WebSocket binding of MissionWeaveProtocol 0.1 (§17) at `/ws`: the challenge
//! handshake and Session Epoch fencing (§6.3, `session`), subscriptions with paged replay
//! (§16, §17.2, `replay`), the fan-out hub fed by the authority's durable batches (`hub`),
//! the per-connection loop with strict framing and per-Group backpressure (§17.1, §17.3,
//! `conn`), TLS 1.3 (`tls`), and a reusable client (`client`). The transcript, the human
//! profile, the paging continuation and the sender-outcome rule are in docs/binding.md.

// The reusable client: the tests, `scenarios --url` (cli/live.rs) and `bench gateway` use
// it; some of its frame builders only the tests do.
mod acks;
#[cfg_attr(not(test), allow(dead_code))]
pub mod client;
mod conn;
pub mod fair;
pub mod hub;
pub mod listen;
mod replay;
mod session;
pub mod tls;

#[cfg(test)]
mod tests;

use crate::runtime::AuthorityHandle;
use crate::store::cursors::CursorStore;
use crate::store::reader::EventReader;
use crate::wire::WireError;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{State, ws};
use axum::http::Uri;
use axum::response::Response;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use wasm_core::binding::limits;
use wasm_core::model::common::{Actor, ActorType};

pub use hub::Hub;

/// The largest WebSocket message read: a COMMAND frame around the largest Command the HTTP
/// edge takes (`MAX_COMMAND_BYTES`), plus the frame's own members (the binding's bound).
pub use wasm_core::binding::limits::MAX_FRAME_BYTES;

/// The socket read buffer: frames are about 1 KB, and the library's default (128 KiB, made
/// ready before each read) costs more to prepare than most frames take to read. Larger
/// messages still arrive whole; the buffer grows as needed.
pub const READ_BUFFER: usize = 16 * 1024;

/// The most a connection's writer gathers before it flushes (`conn::write_loop`): one TLS
/// record's worth. It flushes sooner when its queues run dry. A socket that is not read
/// holds at most this much past its queues (the library's default write buffer, 128 KiB,
/// set here to the same size, would hold 8 times more per stalled socket).
pub const WRITE_BUFFER: usize = 16 * 1024;

/// How long a closing connection may take to send its last frames (the closing `ERROR`, the
/// Close) before its socket is dropped anyway: a client that stops reading must not keep a
/// socket and a task forever. The proxy bounds its closing sends the same way.
pub const CLOSE_GRACE: Duration = Duration::from_secs(3);

/// How long a new connection may take to send its first frame (`HELLO/client_init`): a
/// client that opens `/ws` and says nothing must not keep a socket and a task forever. The
/// second step has its own bound (`challenge_ttl`).
pub const HELLO_WAIT: Duration = Duration::from_secs(10);

/// Authenticated connections one principal may hold at once, by default: a browser with a
/// few tabs, an Agent that reconnects while its old socket has not yet closed. The next HELLO
/// is refused (a fatal `BACKPRESSURE`) before an Agent's Session is opened, so a refused HELLO
/// fences nothing.
pub const SESSIONS_PER_PRINCIPAL: usize = 16;

/// The bounds and lifetimes of the binding.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// EVENT frames queued per connection and Group, at most; past it that Group is paused
    /// on that connection with `BACKPRESSURE` (§17.3).
    pub group_buffer: usize,
    /// Bytes of EVENT frames queued per connection and Group, at most (one frame always fits
    /// an empty queue); past it that Group is paused as for `group_buffer` (§17.3).
    pub group_buffer_bytes: usize,
    /// Bytes of EVENT frames queued per connection over all its Groups, at most (one frame
    /// always fits an empty connection): a replay of large Events cannot hold 100 MB per
    /// socket. A live Group that would pass it is paused; a replay waits for room.
    pub connection_buffer_bytes: usize,
    /// Events one `SUBSCRIBE` replays per Group before the continuation (binding.md;
    /// `limits::REPLAY_PAGE` by default, as demo-node).
    pub replay_page: usize,
    /// How long a `server_challenge` may be answered (payloads.md §10.1:
    /// `limits::CHALLENGE_SECONDS` by default).
    pub challenge_ttl: Duration,
    /// How long a session is valid (`expiresAt` of `server_accept`;
    /// `limits::SESSION_SECONDS` by default).
    pub session_ttl: Duration,
    /// Commands of one connection waiting for the authority, at most.
    pub commands_in_flight: usize,
    /// Authenticated connections of one principal at once, at most ([`SESSIONS_PER_PRINCIPAL`]).
    pub sessions_per_principal: usize,
    /// Retry guidance sent with `BACKPRESSURE`.
    pub retry_after_ms: u64,
    /// How long a closing connection's last frames may take to send ([`CLOSE_GRACE`]).
    pub close_grace: Duration,
    /// How long the first frame may take to arrive ([`HELLO_WAIT`]); past it the client gets
    /// a fatal `AUTH_REQUIRED` and the connection closes.
    pub hello_wait: Duration,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            group_buffer: 256,
            group_buffer_bytes: 1 << 20,
            connection_buffer_bytes: 4 << 20,
            replay_page: limits::REPLAY_PAGE,
            challenge_ttl: Duration::from_secs(limits::CHALLENGE_SECONDS),
            session_ttl: Duration::from_secs(limits::SESSION_SECONDS),
            commands_in_flight: 64,
            sessions_per_principal: SESSIONS_PER_PRINCIPAL,
            retry_after_ms: 250,
            close_grace: CLOSE_GRACE,
            hello_wait: HELLO_WAIT,
        }
    }
}

/// The Organization service that opens Sessions (`session_open`, payloads.md §6.34): the
/// Group Authority's own Principal and key, through the normal authority path.
pub struct ServiceKey {
    pub actor: Actor,
    /// The service's keys: each `session_open` is signed by the one valid at its `issuedAt`
    /// (`crate::service_keys`: a rotation switches it without a restart).
    pub keys: crate::service_keys::ServiceKeys,
}

impl ServiceKey {
    /// The Principal and its one key (no rotation).
    pub fn single(actor: Actor, key_id: &str, seed: &wasm_core::crypto::SecretSeed) -> ServiceKey {
        ServiceKey {
            actor,
            keys: crate::service_keys::ServiceKeys::single(key_id, seed),
        }
    }
}

/// Everything a connection needs, shared.
pub struct Gateway {
    pub config: GatewayConfig,
    pub hub: Arc<Hub>,
    authority: AuthorityHandle,
    /// Shared with the authority's verify stage and the development enrolment.
    registry: crate::live_registry::LiveRegistry,
    service: ServiceKey,
    cursors: Arc<CursorStore>,
    /// The single writer of ACK Cursors (one transaction per batch).
    acks: acks::AckWriter,
    reader: EventReader,
    next_conn: AtomicU64,
    /// HELLOs past their check of `sessions_per_principal` whose connection is not yet
    /// registered with the hub, per principal.
    pending_sessions: std::sync::Mutex<std::collections::HashMap<String, usize>>,
}

/// A place taken under `sessions_per_principal` by a HELLO until its connection is registered.
pub(crate) struct SessionPlace {
    gw: Arc<Gateway>,
    principal: String,
}

impl Drop for SessionPlace {
    fn drop(&mut self) {
        let mut p = self
            .gw
            .pending_sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = p.get_mut(&self.principal) {
            *n -= 1;
            if *n == 0 {
                p.remove(&self.principal);
            }
        }
    }
}

impl Gateway {
    /// The gateway over a started authority whose store lives in `data_dir`, publishing to
    /// `hub`. Cursors go to `data_dir/gateway.sqlite`.
    pub fn new(
        config: GatewayConfig,
        hub: Arc<Hub>,
        authority: AuthorityHandle,
        registry: crate::live_registry::LiveRegistry,
        service: ServiceKey,
        data_dir: &Path,
    ) -> Result<Gateway, String> {
        let cursors = CursorStore::open(&data_dir.join("gateway.sqlite"))
            .map_err(|e| format!("cannot open the cursor store: {e}"))?;
        let reader = EventReader::open(&data_dir.join("authority.sqlite"))
            .map_err(|e| format!("cannot open the replay reader: {e}"))?;
        Gateway::over(config, hub, authority, registry, service, cursors, reader)
    }

    /// The gateway with its Cursors and replay reader given (a cluster node's, over the
    /// shared database).
    pub fn over(
        config: GatewayConfig,
        hub: Arc<Hub>,
        authority: AuthorityHandle,
        registry: crate::live_registry::LiveRegistry,
        service: ServiceKey,
        cursors: CursorStore,
        reader: EventReader,
    ) -> Result<Gateway, String> {
        let cursors = Arc::new(cursors);
        let acks = acks::AckWriter::start(Arc::clone(&cursors))?;
        Ok(Gateway {
            config,
            hub,
            authority,
            registry,
            service,
            cursors,
            acks,
            reader,
            next_conn: AtomicU64::new(1),
            pending_sessions: std::sync::Mutex::default(),
        })
    }

    /// The stored `ACK` Cursor of `(principal, group)`.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn cursor(&self, principal: &str, group: &str) -> Option<u64> {
        self.cursors.get(principal, group).ok().flatten()
    }

    /// A place for one more authenticated connection of `principal`, or `None` when it
    /// holds `sessions_per_principal` already (registered, or between HELLO and registering).
    pub(crate) fn session_place(self: &Arc<Self>, principal: &str) -> Option<SessionPlace> {
        let mut p = self
            .pending_sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let pending = p.get(principal).copied().unwrap_or(0);
        let live = self.hub.connections_of(principal).len();
        if live + pending >= self.config.sessions_per_principal {
            return None;
        }
        *p.entry(principal.to_owned()).or_insert(0) += 1;
        Some(SessionPlace {
            gw: Arc::clone(self),
            principal: principal.to_owned(),
        })
    }

    fn conn_id(&self) -> u64 {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }
}

/// `GET /ws` (upgrade): an Agent connection, or a human one with `?principal=human` (the
/// human profile of binding.md).
pub async fn upgrade(State(gw): State<Arc<Gateway>>, uri: Uri, ws: WebSocketUpgrade) -> Response {
    let kind = match uri.query() {
        Some(q) if q.split('&').any(|p| p == "principal=human") => ActorType::Human,
        _ => ActorType::Agent,
    };
    // The session's log lines carry the upgrade request's span (its request id) and the
    // principal once HELLO has named it; the session runs in a task of its own, after the
    // request was answered, so its span names the request's as its parent.
    let request = tracing::Span::current();
    ws.max_message_size(MAX_FRAME_BYTES)
        .max_frame_size(MAX_FRAME_BYTES)
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(WRITE_BUFFER)
        .on_upgrade(move |socket: ws::WebSocket| {
            let span = tracing::info_span!(
                parent: &request,
                "session",
                principal = tracing::field::Empty
            );
            tracing::Instrument::instrument(conn::run(gw, socket, kind), span)
        })
}

/// Random bytes from the operating system.
pub(crate) fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    fill(&mut b);
    b
}

/// Fills `b` from the operating system's random source (the HELLO's nonces, `hello::challenge`).
pub(crate) fn fill(b: &mut [u8]) {
    if getrandom::fill(b).is_err() {
        // No randomness: fail closed (every challenge would be predictable).
        panic!("the operating system's random source failed");
    }
}

/// Frame identifiers: unique within this process and unpredictable across processes.
pub(crate) fn frame_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let prefix = PREFIX.get_or_init(|| wasm_core::encoding::hex(&random::<8>()));
    format!(
        "urn:missionweaveprotocol:frame:{prefix}:{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// An `ERROR` frame around a §19 document (`WireError::document`, schema-valid by
/// construction).
pub(crate) fn error_frame(e: &WireError) -> String {
    wasm_core::binding::error::error_frame(&frame_id(), e.document())
}

/// An `EVENT` frame around stored JCS bytes, without re-parsing them (the binding's
/// `event_frame`, with this process's next frame id).
pub(crate) fn event_frame(jcs: &[u8]) -> String {
    wasm_core::binding::frames::event_frame(&frame_id(), jcs)
}

/// What the gateway refuses with: the binding's errors, their codes and messages shared with
/// demo-node (`wasm_core::binding::error`).
pub use wasm_core::binding::error::BindingError as GatewayError;

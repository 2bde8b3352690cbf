//! One WebSocket connection (§17.1): the handshake, then a reader (frames in, strictly
//! framed) and a writer (the connection's queues out, `hub::Conn::next`). The writer alone
//! waits on the socket, so a client that stops reading stalls only its own writer; its
//! Groups fill their bounded queues and pause (§17.3) while every other socket and the
//! authority go on.
//!
//! What closes the connection (binding.md, "Errors"): a failed handshake, a first frame that
//! is not `HELLO` or does not come within `GatewayConfig::hello_wait`, a binary message, a fenced or expired session, and a client that leaves
//! its replies unread. Everything else, a rejected Command included, is answered with an
//! `ERROR` frame and the connection stays open. A closing connection's last frames (the
//! closing `ERROR`, the Close) get `GatewayConfig::close_grace` to be sent; then the socket
//! is dropped whether or not the client read them.

use super::hub::{Conn, Next, Principal};
use super::session::{self, Established};
use super::{Gateway, GatewayError, WRITE_BUFFER, error_frame, replay};
use crate::runtime::{Reply, now};
use crate::wire::WireError;
use axum::extract::ws::{Message, WebSocket};
use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use tokio::sync::Semaphore;
use wasm_core::binding::hello::HelloFailure;
use wasm_core::binding::{access, frames};
use wasm_core::frame::{self, Frame};
use wasm_core::json::{self, Value};
use wasm_core::model::common::ActorType;
use wasm_core::model::error::ErrorCode;

/// Replies a client may leave unread before it is disconnected.
pub(super) const MAX_CONTROL: usize = 1024;

/// The refusal of a `SUBSCRIBE` or `ACK` listing more than the binding's `MAX_FRAME_ITEMS`
/// Groups, as a whole, before any of them is looked at.
fn too_many_items(v: &Value) -> Option<WireError> {
    wasm_core::binding::limits::too_many_items(v).map(WireError::from_refusal)
}

/// What the reader does after a frame.
enum Flow {
    Continue,
    Close,
}

/// Runs one connection to its end.
pub(super) async fn run(gw: Arc<Gateway>, mut socket: WebSocket, kind: ActorType) {
    let opened = std::time::Instant::now();
    let mut established = match handshake(&gw, &mut socket, kind).await {
        Ok(e) => {
            crate::request_log::record_principal(&e.principal.id);
            tracing::info!("session opened");
            e
        }
        Err(Some(e)) => {
            // Bounded: a client that does not read gets its socket dropped after the grace.
            let _ = tokio::time::timeout(gw.config.close_grace, async {
                socket.send(Message::Text(error_frame(&e).into())).await?;
                socket.send(Message::Close(None)).await
            })
            .await;
            return;
        }
        Err(None) => return,
    };
    let conn = Arc::new(Conn::new(
        gw.conn_id(),
        established.principal.clone(),
        &gw.config,
    ));
    gw.hub.register(Arc::clone(&conn));
    // Registered: the hub counts it under `sessions_per_principal` from now on.
    drop(established.place.take());
    if let Some(epoch) = established.principal.session_epoch {
        gw.hub.fence_older(&established.principal.id, epoch);
    }
    if socket
        .send(Message::Text(established.accept.clone().into()))
        .await
        .is_err()
    {
        gw.hub.unregister(&conn);
        return;
    }
    let (sink, mut stream) = socket.split();
    let mut writer = tokio::spawn(write_loop(Arc::clone(&conn), sink));
    let in_flight = Arc::new(Semaphore::new(gw.config.commands_in_flight.max(1)));
    // The session ends at its `expiresAt` even if the client says nothing more (§6.3): the
    // fatal `AUTH_REQUIRED` a frame after it would get, then the Close.
    let expiry = tokio::time::sleep_until(until(established.expires));
    let mut expiry = std::pin::pin!(expiry);
    // A key revoked or ended while the socket is open ends the session at once (`org key
    // revoke`, a rotation): the Registry swap wakes every session to look at its own key.
    let mut registry_changes = gw.registry.changes();
    loop {
        let msg = tokio::select! {
            msg = stream.next() => match msg {
                Some(msg) => msg,
                None => break,
            },
            () = &mut expiry => {
                conn.close_with(Some(error_frame(&WireError::from(GatewayError::Expired).fatal())));
                break;
            }
            Ok(()) = registry_changes.changed() => {
                if key_still_valid(&gw, &established) {
                    continue;
                }
                tracing::info!(conn = conn.id, key = %established.key_id, "a session's key ended; closing");
                conn.close_with(Some(error_frame(&WireError::from(GatewayError::KeyEnded).fatal())));
                break;
            }
        };
        let flow = match msg {
            Ok(Message::Text(t)) => on_text(&gw, &conn, &established, &in_flight, t.as_bytes()),
            Ok(Message::Binary(_)) => {
                conn.close_with(Some(error_frame(
                    &WireError::from(GatewayError::Framing(
                        "binary WebSocket messages carry no MissionWeaveProtocol frame (§17.1)"
                            .into(),
                    ))
                    .fatal(),
                )));
                Flow::Close
            }
            Ok(Message::Ping(_) | Message::Pong(_)) => Flow::Continue,
            Ok(Message::Close(_)) | Err(_) => Flow::Close,
        };
        if matches!(flow, Flow::Close) || conn.is_closing() || conn.is_fenced() {
            break;
        }
        if conn.control_len() > MAX_CONTROL {
            tracing::warn!(conn = conn.id, "a client left its replies unread; closing");
            // Its writer waits on a socket that is not read and would wait forever: stop it,
            // so that the socket closes now (and the queue is let go) instead of never.
            writer.abort();
            break;
        }
    }
    conn.close_with(None);
    // A bounded flush: the writer gets `close_grace` to send the closing ERROR and the Close.
    // A client that does not read keeps it blocked on the socket; it is then stopped, and the
    // socket (both halves) is dropped here, instead of the socket and this task living forever.
    if tokio::time::timeout(gw.config.close_grace, &mut writer)
        .await
        .is_err()
    {
        tracing::warn!(
            conn = conn.id,
            "a closing client did not read its last frames; dropped"
        );
        writer.abort();
        let _ = writer.await;
    }
    gw.hub.unregister(&conn);
    tracing::info!(
        latency_ms = opened.elapsed().as_secs_f64() * 1000.0,
        "session closed"
    );
}

/// Whether the key that opened the session is still bound to its principal and valid now.
fn key_still_valid(gw: &Gateway, established: &Established) -> bool {
    let Ok(t) = wasm_core::time::Timestamp::parse_profile(&now().format()) else {
        return true;
    };
    gw.registry
        .current()
        .binding(&established.key_id)
        .is_some_and(|b| {
            b.principal.id.as_str() == established.principal.id && b.valid_at(t.instant())
        })
}

/// The monotonic instant of the wall-clock time `at` (now, if it is past).
fn until(at: wasm_core::authority::Micros) -> tokio::time::Instant {
    let left = u64::try_from(at.0.saturating_sub(now().0)).unwrap_or(0);
    tokio::time::Instant::now() + std::time::Duration::from_micros(left)
}

/// `HELLO` in four steps; `Err(None)` when the client went away.
async fn handshake(
    gw: &Arc<Gateway>,
    socket: &mut WebSocket,
    kind: ActorType,
) -> Result<Established, Option<WireError>> {
    // Bounded: a client that opens the socket and sends nothing is refused and dropped.
    let first = match tokio::time::timeout(gw.config.hello_wait, next_value(socket)).await {
        Ok(v) => v?,
        Err(_) => return Err(Some(WireError::from(GatewayError::NoHello).fatal())),
    };
    if wasm_core::binding::hello::offers_no_common_version(&first) {
        return Err(Some(WireError::from(GatewayError::Version).fatal()));
    }
    let is_hello = first.pointer("/frameType").and_then(Value::as_str) == Some("HELLO");
    let decoded = frame::decode_value(&first);
    let init = match decoded {
        Ok(f) => session::as_client_init(f).map_err(|e| Some(*e))?,
        Err(_) if !is_hello => {
            return Err(Some(
                WireError::from(GatewayError::NotAuthenticated).fatal(),
            ));
        }
        Err(e) => {
            return Err(Some(
                WireError::from(GatewayError::Schema(e.message))
                    .fatal()
                    .about_frame(e.frame_id.as_ref().map(|i| i.as_str())),
            ));
        }
    };
    let (challenge, frame) = session::challenge(gw, init, kind).map_err(|e| Some(*e))?;
    socket
        .send(Message::Text(frame.into()))
        .await
        .map_err(|_| None)?;
    let ttl = gw.config.challenge_ttl + std::time::Duration::from_secs(1);
    let second = match tokio::time::timeout(ttl, next_value(socket)).await {
        Ok(v) => v?,
        Err(_) => {
            return Err(Some(
                WireError::from(GatewayError::Handshake(HelloFailure::Expired.message())).fatal(),
            ));
        }
    };
    let response = match frame::decode_value(&second) {
        Ok(Frame::HelloClientResponse(r)) => r,
        Ok(other) => {
            return Err(Some(
                WireError::from(GatewayError::Handshake(
                    HelloFailure::NotAResponse.message(),
                ))
                .fatal()
                .about_frame(Some(other.frame_id().as_str())),
            ));
        }
        Err(e) => {
            return Err(Some(
                WireError::from(GatewayError::Schema(e.message))
                    .fatal()
                    .about_frame(e.frame_id.as_ref().map(|i| i.as_str())),
            ));
        }
    };
    session::accept(gw, challenge, &response, kind)
        .await
        .map_err(Some)
}

/// The next frame as strict JSON during the handshake.
async fn next_value(socket: &mut WebSocket) -> Result<Value, Option<WireError>> {
    loop {
        match socket.recv().await {
            Some(Ok(Message::Text(t))) => {
                return json::parse(t.as_bytes()).map_err(|e| {
                    Some(WireError::from(GatewayError::NotStrictJson(e.to_string())).fatal())
                });
            }
            Some(Ok(Message::Binary(_))) => {
                return Err(Some(
                    WireError::from(GatewayError::Framing(
                        "binary WebSocket messages carry no MissionWeaveProtocol frame (§17.1)"
                            .into(),
                    ))
                    .fatal(),
                ));
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            _ => return Err(None),
        }
    }
}

/// Sends the connection's frames until it closes or is fenced. Frames are fed to the socket
/// as they are taken and flushed once the queues are empty or a batch reaches
/// [`WRITE_BUFFER`]: the frames waiting at that moment leave in the same TLS records and
/// write calls instead of one write each, and a socket that is not read holds at most one
/// batch beyond its queues (which then fill and pause its Groups, §17.3) while it stalls only
/// this writer.
async fn write_loop(
    conn: Arc<Conn>,
    mut sink: futures_util::stream::SplitSink<WebSocket, Message>,
) {
    // Bytes fed since the last flush.
    let mut batch = 0usize;
    loop {
        let notified = conn.wake.notified();
        match conn.next() {
            Next::Frame(f) => {
                batch += f.len();
                if sink.feed(Message::Text(f)).await.is_err() {
                    break;
                }
                if batch >= WRITE_BUFFER {
                    if sink.flush().await.is_err() {
                        break;
                    }
                    batch = 0;
                }
            }
            Next::Idle => {
                if batch > 0 {
                    if sink.flush().await.is_err() {
                        break;
                    }
                    batch = 0;
                }
                // A frame queued during the flush is not missed: `notified` was created
                // before `next` looked, so its wake-up is kept.
                notified.await;
            }
            Next::Close => {
                let _ = sink.send(Message::Close(None)).await;
                break;
            }
        }
    }
}

/// One text message from an authenticated client.
fn on_text(
    gw: &Arc<Gateway>,
    conn: &Arc<Conn>,
    session: &Established,
    in_flight: &Arc<Semaphore>,
    bytes: &[u8],
) -> Flow {
    // Duplicate members at any depth, a BOM, trailing data: PROTOCOL_VIOLATION (§17.4).
    let v = match json::parse(bytes) {
        Ok(v) => v,
        Err(e) => {
            conn.control(error_frame(
                &GatewayError::NotStrictJson(e.to_string()).into(),
            ));
            return Flow::Continue;
        }
    };
    // The session first, on every frame (§6.3): fenced or expired ends it. A fenced socket
    // got nothing since the newer HELLO; this refusal is the last thing it gets.
    if gw.hub.is_stale(conn) {
        conn.fence();
        let mut e = WireError::from(GatewayError::Fenced)
            .fatal()
            .about_frame(v.pointer("/frameId").and_then(Value::as_str));
        if let Some(c) = v.pointer("/command") {
            e = e.about_command(json::to_string(c).as_bytes());
        }
        conn.close_with(Some(error_frame(&e)));
        return Flow::Close;
    }
    if now() > session.expires {
        conn.close_with(Some(error_frame(
            &WireError::from(GatewayError::Expired).fatal(),
        )));
        return Flow::Close;
    }
    // Bounded before anything else is done with it: a SUBSCRIBE of thousands of Groups would
    // otherwise queue a replay or an ERROR for each.
    if let Some(e) = too_many_items(&v) {
        conn.control(error_frame(&e));
        return Flow::Continue;
    }
    let f = match frame::decode_value(&v) {
        Ok(f) => f,
        Err(e) => {
            conn.control(error_frame(
                &WireError::from(GatewayError::Schema(e.message))
                    .about_frame(e.frame_id.as_ref().map(|i| i.as_str())),
            ));
            return Flow::Continue;
        }
    };
    let frame_id = f.frame_id().as_str().to_owned();
    match f {
        Frame::Subscribe(s) => replay::subscribe(gw, conn, &s),
        Frame::Command(c) => command(gw, conn, in_flight, &frame_id, &c.command.value),
        Frame::Ack(a) => ack(gw, conn, &frame_id, &a),
        Frame::Ping(p) => ping(gw, conn, &frame_id, &p),
        other => conn.control(error_frame(
            &WireError::from(GatewayError::NotAfterAuthentication(
                other.frame_type().as_str().to_owned(),
            ))
            .about_frame(Some(&frame_id)),
        )),
    }
    Flow::Continue
}

/// `COMMAND`: the Command goes to the authority as is; its Events come back through the hub
/// (to subscribers, and to the sender by the rule of binding.md); a refusal comes back as an
/// `ERROR` naming the frame and the Action ID, and the connection stays open.
fn command(
    gw: &Arc<Gateway>,
    conn: &Arc<Conn>,
    in_flight: &Arc<Semaphore>,
    frame_id: &str,
    command: &Value,
) {
    let bytes = json::to_string(command).into_bytes();
    let p: &Principal = &conn.principal;
    if !access::is_session_principal(command, &p.id, p.kind) {
        conn.control(error_frame(
            &WireError::from(GatewayError::NotSessionPrincipal)
                .about_command(&bytes)
                .about_frame(Some(frame_id)),
        ));
        return;
    }
    let Ok(permit) = Arc::clone(in_flight).try_acquire_owned() else {
        conn.control(error_frame(
            &WireError::new(
                ErrorCode::Backpressure,
                "too many Commands of this connection wait for the authority",
            )
            .retry_after(gw.config.retry_after_ms)
            .about_command(&bytes)
            .about_frame(Some(frame_id)),
        ));
        return;
    };
    // Answered on the authority's owner thread (no task per Command): a refusal becomes an
    // ERROR frame on this connection's queue; an accepted Command's EVENT comes by the hub.
    let hub = Arc::clone(&gw.hub);
    let origin = Arc::clone(conn);
    let frame_id = frame_id.to_owned();
    let submitted = bytes.clone();
    gw.authority
        .submit_then(submitted, Some(conn.id), move |reply| {
            drop(permit);
            if let Reply::Refused(e) = reply
                && !hub.is_stale(&origin)
            {
                origin.control(error_frame(
                    &e.about_command(&bytes).about_frame(Some(&frame_id)),
                ));
            }
        });
}

/// `ACK`: durable Cursors per principal and Group (§16), for Groups where the principal holds
/// an active Membership, never past the durable head; recorded for the single writer (`acks`), which
/// stores every pending Cursor in one transaction per batch instead of one task and sync each.
fn ack(gw: &Arc<Gateway>, conn: &Arc<Conn>, frame_id: &str, a: &wasm_core::frame::Ack) {
    let mut ok = Vec::new();
    for item in a.acknowledgements.iter() {
        let group = item.group_id.as_str();
        // Only an active Membership: an ended one is answered exactly as an unknown Group
        // (the same code and message), so a former member learns nothing of it (§17.2).
        if !gw.hub.is_active_member(group, &conn.principal.id) {
            conn.control(error_frame(&WireError::from_refusal(
                access::group_not_found(group, frame_id),
            )));
            continue;
        }
        if item.sequence.0 > gw.hub.head(group) {
            conn.control(error_frame(
                &WireError::from(GatewayError::AckBeyondHead)
                    .in_group(group)
                    .about_frame(Some(frame_id)),
            ));
            continue;
        }
        ok.push((group.to_owned(), item.sequence.0));
    }
    if ok.is_empty() {
        return;
    }
    // Written with every other pending Cursor in the writer's next transaction.
    gw.acks.record(conn, frame_id, ok);
}

/// `PING`: echoed with a fresh nonce; a Presence Record about this session's Agent is kept
/// (ephemeral, never a lease renewal, §6.2). A `PING` that answers ours is not echoed.
fn ping(gw: &Arc<Gateway>, conn: &Arc<Conn>, frame_id: &str, p: &wasm_core::frame::Ping) {
    if let Some(presence) = &p.presence {
        let mine = presence.agent_id.as_str() == conn.principal.id
            && Some(presence.session_epoch.0) == conn.principal.session_epoch;
        if mine {
            gw.hub.set_presence(
                &conn.principal.id,
                wasm_core::model::ToJson::to_json(presence),
            );
        } else {
            conn.control(error_frame(
                &WireError::from(GatewayError::PresenceNotOwn).about_frame(Some(frame_id)),
            ));
            return;
        }
    }
    if let Some(echo) = frames::ping_echo(p, now(), || (super::frame_id(), super::random())) {
        conn.control(echo);
    }
}

//! `SUBSCRIBE` (§17.2) and replay (§16): Membership is enforced per Group without revealing
//! whether a hidden Group exists; history after `afterSequence` (and after the Membership's
//! visibility start) is read from the store in pages bounded by the Group's buffer, up to the
//! durable head, and the subscription then goes live atomically with publishing, so no Event
//! is skipped or reordered between replay and live delivery. A replay stops after
//! `replay_page` Events with the continuation of binding.md (`BACKPRESSURE`,
//! `details.resumeAfterSequence`). Replay is never filtered: attention filters change live
//! delivery only (§17.2).

use super::hub::{Access, Conn};
use super::{Gateway, error_frame, event_frame};
use crate::wire::WireError;
use std::sync::Arc;
use tokio::sync::Notify;
use wasm_core::binding::access;
use wasm_core::binding::limits::page_end;
use wasm_core::frame::Subscribe;
use wasm_core::json::Value;
use wasm_core::model::error::ErrorCode;

/// Rows read from the store at a time.
const READ_CHUNK: usize = 64;

/// The bytes an `EVENT` frame adds around its Event (`event_frame`), at most.
const FRAME_OVERHEAD: usize = 160;

/// Handles one `SUBSCRIBE`: each Group in the order listed; a refused Group does not stop
/// the others.
pub(super) fn subscribe(gw: &Arc<Gateway>, conn: &Arc<Conn>, frame: &Subscribe) {
    let frame_id = frame.frame_id.as_str();
    for g in frame.groups.iter() {
        let group = g.group_id.as_str();
        let after = g.after_sequence.0;
        match gw.hub.access(group, &conn.principal.id) {
            Access::Hidden => conn.control(error_frame(&WireError::from_refusal(
                access::group_not_found(group, frame_id),
            ))),
            Access::Visible {
                visibility_after,
                archive,
                ..
            } => {
                if let Some(a) = archive.filter(|a| after < a.through_sequence) {
                    // The online log of an archived Group begins after its signed final
                    // snapshot (§7.4, §16; binding.md).
                    let mut e = WireError::new(
                        ErrorCode::CursorTooOld,
                        "the Group is archived: restore its signed snapshot and resume after \
                         throughSequence",
                    )
                    .in_group(group)
                    .about_frame(Some(frame_id))
                    .detail("snapshotId", Value::string(a.snapshot_id.clone()))
                    .detail("throughSequence", Value::from(a.through_sequence))
                    .detail("snapshotEventSequence", Value::from(a.reference_sequence));
                    if let Some(h) = &a.state_hash {
                        e = e.detail("stateHash", Value::string(h.clone()));
                    }
                    conn.control(error_frame(&e));
                    continue;
                }
                let start = after.max(visibility_after);
                let (generation, space) =
                    conn.begin_subscription(group, g.attention.clone(), start);
                gw.hub.subscribe(group, conn);
                tokio::spawn(replay(
                    Arc::clone(gw),
                    Arc::clone(conn),
                    group.to_owned(),
                    generation,
                    space,
                    start,
                ));
            }
        }
    }
}

/// One replay served (it went live, or ended its page with `replay_page`), with `sent`
/// Events.
fn count_page(sent: usize) {
    metrics::counter!("mwp_replay_pages_total").increment(1);
    metrics::counter!("mwp_replay_events_total").increment(sent as u64);
}

/// Replays `group` after `start` into the subscription's queue, then goes live.
async fn replay(
    gw: Arc<Gateway>,
    conn: Arc<Conn>,
    group: String,
    generation: u64,
    space: Arc<Notify>,
    start: u64,
) {
    let mut next = start + 1;
    let mut sent = 0usize;
    let end = page_end(start, gw.config.replay_page);
    loop {
        let head = match gw.hub.try_go_live(&group, &conn, generation, next) {
            Ok(()) => {
                count_page(sent);
                return;
            }
            Err(head) => head,
        };
        if next > end {
            conn.pause(&group, Some(generation), "replay_page");
            count_page(sent);
            return;
        }
        let (room, bytes, alone) = loop {
            let notified = space.notified();
            match conn.replay_room(&group, generation) {
                None => return,
                Some((0, _, _)) => notified.await,
                Some(room) => break room,
            }
        };
        let want = room
            .min(usize::try_from(head.min(end) - next + 1).unwrap_or(usize::MAX))
            .min(READ_CHUNK);
        let reader = Arc::clone(&gw);
        let g = group.clone();
        // Bounded in bytes too (the frame around each Event included), so a replay of large
        // Events never queues past the connection's bound.
        let rows = tokio::task::spawn_blocking(move || {
            reader
                .reader
                .group_events_within(&g, next - 1, want, bytes, FRAME_OVERHEAD, alone)
        })
        .await;
        let rows = match rows {
            Ok(Ok(rows)) if !rows.is_empty() => rows,
            // The next Event is larger than the room left: wait until frames are sent.
            Ok(Ok(_)) if !alone => {
                let notified = space.notified();
                if conn.starve() {
                    notified.await;
                }
                continue;
            }
            other => {
                if let Ok(Err(e)) = &other {
                    tracing::error!(group = %group, error = %e, "replay read failed");
                }
                conn.control(error_frame(
                    &WireError::new(
                        ErrorCode::InternalError,
                        "replay failed; SUBSCRIBE again later",
                    )
                    .in_group(&group),
                ));
                return;
            }
        };
        let n = rows.len();
        let frames = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (next + i as u64, event_frame(r)))
            .collect();
        if !conn.push_replayed(&group, generation, frames) {
            return;
        }
        next += n as u64;
        sent += n;
    }
}

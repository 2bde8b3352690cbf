//! Fairness of `POST /api/commands` (issue 26): the authority's queue is bounded and shared
//! (`runtime::QUEUE_CAPACITY`), so one client address flooding it would push every other
//! caller into `BACKPRESSURE`. Each client address may have at most
//! [`COMMANDS_PER_ADDRESS`] Commands in flight; one more is answered `503` with a retryable
//! `BACKPRESSURE` and `Retry-After` before its body is read, while other addresses go on. The
//! address is the peer's, as the listener saw it (`ConnectInfo`, set by `listen`); a request
//! without one (in-process callers) is not counted.

use crate::runtime::RETRY_AFTER_MS;
use crate::wire::WireError;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use wasm_core::model::error::ErrorCode;

/// Commands one client address may have in flight, by default: a busy Agent or console keeps
/// a few, and 32 addresses at this bound still fit the authority's queue.
pub const COMMANDS_PER_ADDRESS: usize = 32;

/// Commands in flight per client address.
pub struct PerAddress {
    max: usize,
    in_flight: Mutex<HashMap<IpAddr, usize>>,
}

/// One Command's place, given back when its request ends (answered, timed out or dropped).
struct Place {
    bound: Arc<PerAddress>,
    address: IpAddr,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut m = self.bound.lock();
        if let Some(n) = m.get_mut(&self.address) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.address);
            }
        }
    }
}

impl PerAddress {
    pub fn new(max: usize) -> Arc<PerAddress> {
        Arc::new(PerAddress {
            max,
            in_flight: Mutex::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn take(self: &Arc<Self>, address: IpAddr) -> Option<Place> {
        let mut m = self.lock();
        let n = m.entry(address).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(Place {
            bound: Arc::clone(self),
            address,
        })
    }
}

/// The middleware in front of `POST /api/commands`.
pub async fn limit(State(bound): State<Arc<PerAddress>>, req: Request, next: Next) -> Response {
    let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>().copied() else {
        return next.run(req).await;
    };
    let Some(place) = bound.take(peer.ip()) else {
        return WireError::new(
            ErrorCode::Backpressure,
            format!(
                "this client address has {} Commands in flight, the most allowed; send again \
                 after retryAfterMs",
                bound.max
            ),
        )
        .retry_after(RETRY_AFTER_MS)
        .with_status(StatusCode::SERVICE_UNAVAILABLE)
        .into_response();
    };
    let response = next.run(req).await;
    drop(place);
    response
}

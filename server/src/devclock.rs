//! `serve --dev-clock`: the authority's clock, settable over `PUT /api/dev/clock`, so that
//! `scenarios --url` can replay the behavioural suite at the scenarios' own times against a
//! live server, as the in-process runner does (leases, offers and Session lifetimes expire by
//! the authority's clock, §10.2, §6.3). Development only: `serve` refuses it on a non-loopback
//! address and with a deployment's Registry, and says so at start-up.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use wasm_core::authority::Micros;
use wasm_core::json::{self, Object, Value};
use wasm_core::model::error::ErrorCode;

use crate::wire::WireError;

/// Unset: the wall clock.
const WALL: i64 = i64::MIN;

/// The authority's clock in development: the wall clock until set.
pub struct DevClock {
    set: AtomicI64,
    /// A cluster's clock, in its database (`mwp_dev_clock`): set through any node, read by
    /// the writer wherever it is (docs/cluster.md). Used from blocking threads only.
    shared: Option<std::sync::Mutex<postgres::Client>>,
}

impl std::fmt::Debug for DevClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevClock")
            .field("set", &self.set)
            .field("shared", &self.shared.is_some())
            .finish()
    }
}

impl Default for DevClock {
    fn default() -> Self {
        DevClock {
            set: AtomicI64::new(WALL),
            shared: None,
        }
    }
}

impl DevClock {
    /// The clock of a cluster over `url` (development only, like the flag).
    pub fn shared(url: &str) -> Result<DevClock, String> {
        let mut client = crate::cluster::pg::connect(url).map_err(|e| e.to_string())?;
        client
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS mwp_dev_clock (
                     id integer PRIMARY KEY CHECK (id = 1), micros bigint);
                 INSERT INTO mwp_dev_clock (id, micros) VALUES (1, NULL)
                     ON CONFLICT (id) DO NOTHING;",
            )
            .map_err(|e| crate::cluster::pg::err(e).to_string())?;
        Ok(DevClock {
            set: AtomicI64::new(WALL),
            shared: Some(std::sync::Mutex::new(client)),
        })
    }

    /// The instant the authority decides at.
    pub fn now(&self) -> Micros {
        let set = match &self.shared {
            Some(c) => {
                let row = c.lock().map_err(|_| ()).and_then(|mut c| {
                    c.query_one("SELECT micros FROM mwp_dev_clock WHERE id = 1", &[])
                        .map_err(|_| ())
                });
                match row {
                    Ok(r) => r.get::<_, Option<i64>>(0).unwrap_or(WALL),
                    // The database is away: the last value this node knew.
                    Err(()) => self.set.load(Ordering::SeqCst),
                }
            }
            None => self.set.load(Ordering::SeqCst),
        };
        match set {
            WALL => crate::runtime::now(),
            t => Micros(t),
        }
    }

    /// Sets the clock (`None`: back to the wall clock).
    pub fn set(&self, t: Option<Micros>) {
        self.set.store(t.map_or(WALL, |t| t.0), Ordering::SeqCst);
        if let Some(c) = &self.shared
            && let Ok(mut c) = c.lock()
        {
            let micros = t.map(|t| t.0);
            if let Err(e) = c.execute(
                "UPDATE mwp_dev_clock SET micros = $1 WHERE id = 1",
                &[&micros],
            ) {
                tracing::error!(cause = %e, "the cluster's development clock was not set");
            }
        }
    }

    fn document(&self) -> String {
        let mut o = Object::new();
        o.insert("now", Value::string(self.now().format()));
        o.insert("set", Value::Bool(self.set.load(Ordering::SeqCst) != WALL));
        json::to_string(&Value::Object(o))
    }
}

/// `GET /api/dev/clock` and `PUT /api/dev/clock` (`{"now": "<RFC 3339>"}`, or `{"now": null}`
/// for the wall clock).
pub fn routes(clock: Arc<DevClock>) -> Router {
    Router::new().route(
        "/api/dev/clock",
        axum::routing::get(get_clock)
            .put(put_clock)
            .with_state(clock),
    )
}

async fn get_clock(State(clock): State<Arc<DevClock>>) -> Response {
    // A cluster's clock is read from its database: off the async threads.
    let doc = tokio::task::spawn_blocking(move || clock.document())
        .await
        .unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], doc).into_response()
}

async fn put_clock(State(clock): State<Arc<DevClock>>, body: Bytes) -> Response {
    let refuse = |m: &str| {
        WireError::new(ErrorCode::InvalidCommand, m.to_owned())
            .with_status(StatusCode::BAD_REQUEST)
            .into_response()
    };
    let Ok(v) = json::parse(&body) else {
        return refuse("the body must be {\"now\": \"<RFC 3339 timestamp>\" | null}");
    };
    let t = match v.pointer("/now") {
        Some(Value::Null) => None,
        Some(Value::String(t)) => match Micros::parse(t.as_str()) {
            Some(t) => Some(t),
            None => return refuse("now is not an RFC 3339 timestamp"),
        },
        _ => return refuse("the body must be {\"now\": \"<RFC 3339 timestamp>\" | null}"),
    };
    // A cluster's clock is written to its database: off the async threads.
    let doc = tokio::task::spawn_blocking(move || {
        clock.set(t);
        clock.document()
    })
    .await
    .unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], doc).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    async fn call(app: &Router, method: &str, body: &str) -> (StatusCode, String) {
        let r = app
            .clone()
            .oneshot(
                Request::builder()
                    .method(method)
                    .uri("/api/dev/clock")
                    .body(Body::from(body.to_owned()))
                    .expect("request"),
            )
            .await
            .expect("response");
        let status = r.status();
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 16)
            .await
            .expect("body");
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn the_clock_is_set_read_and_released() {
        let clock = Arc::new(DevClock::default());
        let app = routes(Arc::clone(&clock));
        let (s, b) = call(&app, "GET", "").await;
        assert_eq!(s, StatusCode::OK);
        assert!(b.contains("\"set\":false"), "{b}");
        let (s, b) = call(&app, "PUT", r#"{"now":"2026-07-15T08:00:00Z"}"#).await;
        assert_eq!(s, StatusCode::OK, "{b}");
        assert_eq!(
            clock.now(),
            Micros::parse("2026-07-15T08:00:00Z").expect("t")
        );
        assert!(
            b.contains("2026-07-15T08:00:00") && b.contains("\"set\":true"),
            "{b}"
        );
        for bad in [
            "",
            "{}",
            r#"{"now":"yesterday"}"#,
            r#"{"now":5}"#,
            "not json",
        ] {
            let (s, b) = call(&app, "PUT", bad).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}: {b}");
            assert!(b.contains("INVALID_COMMAND"), "{b}");
        }
        // Unchanged by the refusals; then back to the wall clock.
        assert_eq!(
            clock.now(),
            Micros::parse("2026-07-15T08:00:00Z").expect("t")
        );
        let (s, _) = call(&app, "PUT", r#"{"now":null}"#).await;
        assert_eq!(s, StatusCode::OK);
        assert!(clock.now() > Micros::parse("2026-11-01T00:00:00Z").expect("t"));
    }
}

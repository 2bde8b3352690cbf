//! The operator's side of a running server (docs/operations.md): `GET /metrics` in the
//! Prometheus text format, served only on the operator's listener (`serve --metrics-addr
//! HOST:PORT`, off unless given, never on the public router), and `GET /readyz`.
//!
//! Every module records through the `metrics` facade (`metrics::counter!`, `histogram!`,
//! `gauge!`); this module installs the one recorder (the Prometheus exporter without an HTTP
//! listener of its own) and renders its text in our route. Without `--metrics-addr` no recorder
//! is installed and every macro is a no-op. What is cheaper to read at scrape time than to
//! count on the hot path (open sockets, subscriptions, queued frames, Groups, RSS) is read by
//! the [`Collect`] callbacks when `/metrics` is asked for.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Reads a value at scrape time and sets its gauges.
pub type Collect = Box<dyn Fn() + Send + Sync>;

/// Seconds: fsync, a commit round trip, the verify stage's batch (50 µs … 2.5 s).
const SECONDS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5,
];

/// Events (or Commands) in one batch: 1 … `runtime::MAX_BATCH` and the PostgreSQL committer's
/// merged batches beyond it.
const BATCH: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// The installed recorder's handle and the scrape-time collectors.
pub struct Metrics {
    handle: PrometheusHandle,
    collect: std::sync::Mutex<Vec<Collect>>,
}

impl Metrics {
    /// Installs the process's recorder (once; a second call fails). Call it before anything
    /// records: a metric recorded earlier went to the no-op recorder.
    pub fn install() -> Result<Arc<Metrics>, String> {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS)
            .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_events".into()), BATCH))
            .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_commands".into()), BATCH))
            .map_err(|e| format!("metrics: {e}"))?;
        let handle = builder
            .install_recorder()
            .map_err(|e| format!("cannot install the metrics recorder: {e}"))?;
        describe();
        Ok(Arc::new(Metrics {
            handle,
            collect: std::sync::Mutex::new(Vec::new()),
        }))
    }

    /// Adds a scrape-time collector.
    pub fn collect(&self, f: Collect) {
        self.collect
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(f);
    }

    /// The Prometheus text: the collectors run first.
    pub fn render(&self) -> String {
        for f in self
            .collect
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
        {
            f();
        }
        if let Some(bytes) = resident_bytes() {
            metrics::gauge!("mwp_process_resident_memory_bytes").set(bytes as f64);
        }
        self.handle.render()
    }

    /// Drains the histograms' buckets now and then, so that memory stays bounded between
    /// scrapes (the exporter's "upkeep").
    pub fn spawn_upkeep(self: &Arc<Self>) {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                me.handle.run_upkeep();
            }
        });
    }
}

/// The help lines of our metrics (the webhook's and any other module's describe their own).
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "mwp_commands_total",
        "Commands answered, by kind, outcome (accepted, duplicate, refused) and wire code"
    );
    describe_histogram!(
        "mwp_commit_batch_events",
        "Events written per store transaction"
    );
    describe_histogram!(
        "mwp_fsync_seconds",
        "Time to make a batch durable: fdatasync of the WAL (sqlite), the commit round trip (postgres)"
    );
    describe_histogram!(
        "mwp_verify_batch_seconds",
        "The verify stage's time per batch (the six stages of §6.4)"
    );
    describe_histogram!(
        "mwp_verify_batch_commands",
        "Commands per verify-stage batch"
    );
    describe_gauge!("mwp_sockets_open", "Open /ws sessions, by profile");
    describe_gauge!("mwp_subscriptions", "Group subscriptions on open sessions");
    describe_gauge!(
        "mwp_outbound_queued_frames",
        "EVENT frames queued to sessions, not yet written"
    );
    describe_gauge!(
        "mwp_outbound_queued_bytes",
        "Bytes of EVENT frames queued to sessions"
    );
    describe_counter!(
        "mwp_frames_dropped_total",
        "Frames not queued for backpressure: a Group paused on a full queue, own Events past the bound"
    );
    describe_counter!(
        "mwp_replay_pages_total",
        "Replays served (one per SUBSCRIBE page, ended by going live or by a replay_page pause)"
    );
    describe_counter!("mwp_replay_events_total", "Events sent by replays");
    describe_gauge!("mwp_groups", "Groups known to the fan-out hub");
    describe_gauge!("mwp_events", "Events in the authority's log");
    describe_gauge!(
        "mwp_process_resident_memory_bytes",
        "Resident set size (VmRSS)"
    );
}

/// The process's resident set, from `/proc/self/status` (`VmRSS`, in kB; `statm` counts
/// pages, whose size std does not tell).
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Whether the server may take traffic (`GET /readyz`): `Ok` or why not.
pub type ReadyCheck = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// What `GET /readyz` asks: nothing until the store is replayed (the authority started), then
/// the check the running server gives (its store has not failed; on a cluster, the lease).
#[derive(Default)]
pub struct Readiness {
    check: std::sync::RwLock<Option<ReadyCheck>>,
}

impl Readiness {
    /// The store is replayed: from now on `check` answers.
    pub fn running(&self, check: ReadyCheck) {
        *self
            .check
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(check);
    }

    pub fn state(&self) -> Result<(), String> {
        let check = self
            .check
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        match check {
            Some(c) => c(),
            None => Err("the store is being replayed".into()),
        }
    }
}

/// `GET /readyz`: 200 `{"ready":true}`, or 503 `{"ready":false,"reason":"…"}`.
pub async fn readyz(ready: Arc<Readiness>) -> Response {
    let (status, body) = match ready.state() {
        Ok(()) => (StatusCode::OK, r#"{"ready":true}"#.to_owned()),
        Err(why) => {
            let mut o = wasm_core::json::Object::new();
            o.insert("ready", wasm_core::json::Value::Bool(false));
            o.insert("reason", wasm_core::json::Value::string(why));
            (
                StatusCode::SERVICE_UNAVAILABLE,
                wasm_core::json::to_string(&wasm_core::json::Value::Object(o)),
            )
        }
    };
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// The operator's routes: `GET /metrics` and `GET /readyz`.
pub fn routes(metrics: Arc<Metrics>, ready: Arc<Readiness>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let m = Arc::clone(&metrics);
                async move {
                    let text = tokio::task::spawn_blocking(move || m.render())
                        .await
                        .unwrap_or_default();
                    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
                }
            }),
        )
        .route(
            "/readyz",
            get(move || {
                let c = Arc::clone(&ready);
                async move { readyz(c).await }
            }),
        )
}

/// Serves `routes` on `addr` (plain HTTP: an operator's address is loopback or a private
/// network, as for a Prometheus scrape) until the process ends.
pub async fn serve(addr: &str, app: Router) -> Result<std::net::SocketAddr, String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on --metrics-addr {addr}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("--metrics-addr {addr}: {e}"))?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the operator listener stopped");
        }
    });
    Ok(local)
}

/// The operator's local socket in the data directory (`DATA/operator.sock`, Unix only), where
/// `weave-console backup` asks the running authority for its live projection hash
/// ([`crate::runtime::AuthorityHandle::checkpoint`]). A socket in the data directory rather
/// than a route on `--metrics-addr`: reaching it takes the file-system right to the data
/// directory (mode 0700, the socket 0600), which is what reading the log for a backup takes
/// anyway; `backup --data DIR` finds the server of that very directory with no address to
/// give; and it is there without `--metrics-addr`.
pub const OPERATOR_SOCKET: &str = "operator.sock";

/// The one request the socket understands (a line).
pub const CHECKPOINT_REQUEST: &str = "checkpoint";

/// Serves [`OPERATOR_SOCKET`] in `data` for `authority` until the process ends: one connection
/// at a time, one request line of at most 64 bytes read within 5 s, one JSON line answered
/// (`{"position","events","projection"}` or `{"error"}`). A socket file left by a server that
/// ended is replaced; one another server answers on is left alone (an error).
#[cfg(unix)]
pub fn serve_local(
    data: &std::path::Path,
    authority: crate::runtime::AuthorityHandle,
) -> Result<std::path::PathBuf, String> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    let path = data.join(OPERATOR_SOCKET);
    if std::os::unix::net::UnixStream::connect(&path).is_ok() {
        return Err(format!(
            "{}: another server answers there (two servers on one data directory?)",
            path.display()
        ));
    }
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // Out of descriptors, say: not a busy loop.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            // One at a time: a second backup waits for the first one's answer.
            let (read, mut write) = stream.into_split();
            let mut line = String::new();
            let asked = tokio::time::timeout(
                Duration::from_secs(5),
                tokio::io::BufReader::new(read.take(64)).read_line(&mut line),
            )
            .await;
            let answer = match asked {
                Ok(Ok(_)) if line.trim() == CHECKPOINT_REQUEST => {
                    checkpoint_json(authority.checkpoint().await)
                }
                _ => checkpoint_json(Err(format!(
                    "not a request: send {CHECKPOINT_REQUEST:?} and a newline"
                ))),
            };
            let _ = write.write_all(format!("{answer}\n").as_bytes()).await;
        }
    });
    Ok(path)
}

/// The socket's answer line.
fn checkpoint_json(c: Result<crate::runtime::Checkpoint, String>) -> String {
    use wasm_core::json::{Object, Value};
    let mut o = Object::new();
    match c {
        Ok(c) => {
            o.insert("position", Value::from(c.position));
            o.insert("events", Value::from(c.events));
            o.insert("projection", Value::string(c.projection));
        }
        Err(why) => o.insert("error", Value::string(why)),
    }
    wasm_core::json::to_string(&Value::Object(o))
}

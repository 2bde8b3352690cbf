//! The console's HTTP application: one [`AppState`] (the static console, the conformance
//! summary, the authority's `POST /api/commands`, the `/ws` binding, the routes of the parts
//! that are on) made into one axum `Router`, with the layers every request passes (security
//! headers, compression, the 30 s cut, the request log). `serve`, the tests and the proxy build
//! their servers from it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower_http::services::ServeDir;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use wasm_core::model::error::ErrorCode;

use crate::gateway::Gateway;
use crate::runtime::{AuthorityHandle, RETRY_AFTER_MS, Reply};
use crate::wire::WireError;

pub use crate::limits::MAX_COMMAND_BYTES;

/// A request still unanswered after this long is cut with 408: long enough for a Command
/// that waits behind a full queue and a slow disk flush, short enough that a stalled client
/// (or a slow-loris upload) cannot hold a connection open.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What the console's HTTP application serves.
pub struct AppState {
    /// The built console (`public/`, or `dist/`).
    pub public: PathBuf,
    /// The stylesheet directory, served under `/style`.
    pub style: Option<PathBuf>,
    /// `GET /api/core/conformance`'s answer (`bundle::conformance_json`).
    pub conformance: String,
    /// The embedded authority: `POST /api/commands` and `GET /api/registry`.
    pub authority: Option<AuthorityHandle>,
    /// The WebSocket binding at `/ws` (§17).
    pub gateway: Option<Arc<Gateway>>,
    /// The routes of the parts that are on (enrolment, Artifacts, the demo, the proxy, the
    /// development clock).
    pub extra: Router,
    /// Every request is cut after this long.
    pub timeout: Duration,
}

impl AppState {
    /// The static console and its conformance summary only; the rest is added.
    pub fn new(public: &Path, conformance: String) -> AppState {
        AppState {
            public: public.to_path_buf(),
            style: None,
            conformance,
            authority: None,
            gateway: None,
            extra: Router::new(),
            timeout: REQUEST_TIMEOUT,
        }
    }

    pub fn style(mut self, style: Option<&Path>) -> AppState {
        self.style = style.map(Path::to_path_buf);
        self
    }

    pub fn authority(mut self, handle: AuthorityHandle) -> AppState {
        self.authority = Some(handle);
        self
    }

    pub fn gateway(mut self, gateway: Arc<Gateway>) -> AppState {
        self.gateway = Some(gateway);
        self
    }

    /// Adds `routes` to the application.
    pub fn routes(mut self, routes: Router) -> AppState {
        self.extra = self.extra.merge(routes);
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> AppState {
        self.timeout = timeout;
        self
    }
}

/// `POST /api/commands`: one signed Command in, its Events (once durable) or a wire error out.
async fn post_command(
    State(handle): State<AuthorityHandle>,
    headers: axum::http::HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return WireError::new(
                ErrorCode::ProtocolViolation,
                format!(
                    "the request body is larger than {MAX_COMMAND_BYTES} bytes, the most a \
                     Command may take"
                ),
            )
            .with_status(StatusCode::PAYLOAD_TOO_LARGE)
            .into_response();
        }
        Err(e) => {
            tracing::warn!(cause = %e.body_text(), "a request body could not be read");
            return WireError::new(
                ErrorCode::ProtocolViolation,
                "the request body could not be read",
            )
            .with_status(StatusCode::BAD_REQUEST)
            .into_response();
        }
    };
    // A cluster node forwarding a connection's Command asks for the Events' bytes in lines
    // (docs/cluster.md, "Forwarding"); anyone else gets the document.
    let lines = headers
        .get(crate::cluster::forward::ANSWER_HEADER)
        .is_some_and(|v| v.as_bytes() == crate::cluster::forward::ANSWER_LINES.as_bytes());
    // The log names who sent it (the actor's id: never a key), not trusted before the
    // authority verified it; parsed only when the request's span is logged at all.
    if !tracing::Span::current().is_disabled()
        && let Ok(v) = wasm_core::json::parse(&body)
        && let Some(actor) = v
            .pointer("/actor/id")
            .and_then(wasm_core::json::Value::as_str)
    {
        crate::request_log::record_principal(actor);
    }
    let reply = if lines {
        handle.submit_lines(body.to_vec()).await
    } else {
        handle.submit(body.to_vec()).await
    };
    match reply {
        Reply::Done(body) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                if lines {
                    "text/plain; charset=utf-8"
                } else {
                    "application/json"
                },
            )],
            body,
        )
            .into_response(),
        Reply::Refused(e) => e.into_response(),
    }
}

/// Gives the timeout layer's empty 408 a wire error document (retryable: an unchanged
/// Command keeps its Action ID, so a retry is idempotent even if the first one went through).
async fn timeout_document(timeout: Duration, response: Response) -> Response {
    if response.status() == StatusCode::REQUEST_TIMEOUT
        && !response.headers().contains_key(header::CONTENT_TYPE)
    {
        return WireError::new(
            ErrorCode::Backpressure,
            format!(
                "the request was not answered within {} s; an unchanged retry is safe",
                timeout.as_secs_f64()
            ),
        )
        .retry_after(RETRY_AFTER_MS)
        .with_status(StatusCode::REQUEST_TIMEOUT)
        .into_response();
    }
    response
}

/// The console's routes from `state`, each request cut after its timeout and logged (request
/// id, method, path, principal when known, status, latency).
pub fn router(state: AppState) -> Router {
    let AppState {
        public,
        style,
        conformance,
        authority,
        gateway,
        extra,
        timeout,
    } = state;
    let conformance: std::sync::Arc<str> = conformance.into();
    let mut app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        // Served on the operator's address only (`serve --metrics-addr`, ops.rs): here a plain
        // 404, not the console's page shell, so that a scrape aimed here fails visibly.
        .route("/metrics", get(|| async { StatusCode::NOT_FOUND }))
        .route(
            "/api/core/conformance",
            get(move || {
                let body = conformance.to_string();
                async move { ([(header::CONTENT_TYPE, "application/json")], body) }
            }),
        );
    if let Some(handle) = authority {
        app = app.merge(crate::registry_api::routes(handle.public_registry()));
        app = app.route(
            "/api/commands",
            axum::routing::post(post_command)
                .with_state(handle)
                .layer(DefaultBodyLimit::max(MAX_COMMAND_BYTES))
                .layer(axum::middleware::from_fn_with_state(
                    crate::gateway::fair::PerAddress::new(
                        crate::gateway::fair::COMMANDS_PER_ADDRESS,
                    ),
                    crate::gateway::fair::limit,
                )),
        );
    }
    if let Some(gw) = gateway {
        app = app.route("/ws", get(crate::gateway::upgrade).with_state(gw));
    }
    if let Some(style) = style {
        app = app.nest_service("/style", ServeDir::new(&style));
    }
    app.merge(extra)
        .merge(crate::console::static_service(&public))
        .layer(axum::middleware::from_fn(crate::console::headers))
        .layer(crate::console::compression())
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        .layer(axum::middleware::map_response(move |r: Response| {
            timeout_document(timeout, r)
        }))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &axum::http::Request<axum::body::Body>| {
                    // The path only: a query or fragment could carry a token.
                    tracing::info_span!(
                        "request",
                        request_id = crate::request_log::next_request_id(),
                        method = %req.method(),
                        path = %req.uri().path(),
                        principal = tracing::field::Empty,
                    )
                })
                .on_request(())
                .on_response(|r: &Response, latency: Duration, _: &tracing::Span| {
                    tracing::info!(
                        status = r.status().as_u16(),
                        latency_ms = latency.as_secs_f64() * 1000.0,
                        "answered"
                    );
                })
                .on_failure(()),
        )
}

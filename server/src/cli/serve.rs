//! `weave-console serve`: serves the static console (`public/`, plus `style/` under `/style`)
//! and `GET /healthz`, until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
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

use super::{flag_value, split_flag};
use crate::runtime::{AuthorityHandle, RETRY_AFTER_MS, Reply};
use crate::usage_error;
use crate::wire::WireError;

const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// The largest request body `POST /api/commands` reads: 1,265,536 bytes. PROTOCOL.md sets no
/// byte limit on a Command or a frame (§17.1 asks only for one JSON text per WebSocket
/// message; §17.4 sends large content as an Artifact, by reference), and a Command's `payload`
/// is an open object, so the bound comes from the schemas: the largest bounded string any
/// document carries inline is a Message text part, 100,000 characters
/// (`message.schema.json`); one character takes at most 12 bytes of JSON (an escaped
/// surrogate pair, `\uD83D\uDE00`); the envelope around it (identifiers of at most 512
/// characters, the actor, the signature) fits in 64 KiB. Larger bodies get 413 unread.
pub const MAX_COMMAND_BYTES: usize = 100_000 * 12 + 64 * 1024;

/// A request still unanswered after this long is cut with 408: long enough for a Command
/// that waits behind a full queue and a slow disk flush, short enough that a stalled client
/// (or a slow-loris upload) cannot hold a connection open.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Said by `GET /api/core/conformance` when the bundle is missing; the reason (which names
/// paths) goes to the log.
const BUNDLE_MISSING: &str = "set MWP_PROTOCOL_DIR on the server (details in its log)";

const HELP: &str = "\
Usage: weave-console serve [--addr HOST:PORT] [--public DIR] [--data DIR]

  --addr HOST:PORT  listen address (default 127.0.0.1:8080, or env WEAVE_ADDR)
  --public DIR      static files to serve (default: public/ of the workspace)
  --data DIR        the embedded authority's durable store and the development
                    Organization (default: ./data, or env WEAVE_DATA)
  --registry FILE   a deployment's own Registry evidence (the bundle's Registry-fixture
                    shape) instead of the development Organization; needs --authority-key
  --authority-key FILE
                    {keyId, seed}: the Group Authority key, bound in the Registry to
                    an Organization service Principal

POST /api/commands takes one signed Command (JSON) and answers, once durable, with the
Events it appended (or the original ones for an exact retry) or a wire error.

The style/ directory next to the public directory is served under /style.
";

#[derive(Debug, PartialEq)]
struct Options {
    addr: String,
    public: Option<PathBuf>,
    data: PathBuf,
    registry: Option<(PathBuf, PathBuf)>,
}

enum Parsed {
    Run(Options),
    Help,
}

fn parse(args: &[String], env_addr: Option<String>) -> Result<Parsed, String> {
    let mut addr = None;
    let mut public = None;
    let mut data = None;
    let mut registry: Option<PathBuf> = None;
    let mut authority_key: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = split_flag(arg);
        match flag {
            "-h" | "--help" => return Ok(Parsed::Help),
            "--addr" => addr = Some(flag_value(flag, inline, &mut it)?.to_string()),
            "--public" => public = Some(PathBuf::from(flag_value(flag, inline, &mut it)?)),
            "--data" => data = Some(PathBuf::from(flag_value(flag, inline, &mut it)?)),
            "--registry" => registry = Some(PathBuf::from(flag_value(flag, inline, &mut it)?)),
            "--authority-key" => {
                authority_key = Some(PathBuf::from(flag_value(flag, inline, &mut it)?));
            }
            other if other.starts_with('-') => {
                return Err(format!("unknown flag `{other}` for `serve`"));
            }
            other => return Err(format!("unexpected argument `{other}` for `serve`")),
        }
    }
    let addr = addr
        .or(env_addr.filter(|a| !a.is_empty()))
        .unwrap_or_else(|| DEFAULT_ADDR.to_string());
    let data = data
        .or_else(|| {
            std::env::var("WEAVE_DATA")
                .ok()
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from("data"));
    let registry = match (registry, authority_key) {
        (Some(r), Some(k)) => Some((r, k)),
        (None, None) => None,
        _ => return Err("--registry and --authority-key go together".into()),
    };
    Ok(Parsed::Run(Options {
        addr,
        public,
        data,
        registry,
    }))
}

/// True if `dir` looks like this workspace's root.
fn is_workspace_root(dir: &Path) -> bool {
    dir.join("public").join("index.html").is_file() && dir.join("Cargo.toml").is_file()
}

/// Finds the workspace root: an ancestor of the current directory, then of the executable
/// (e.g. `target/debug/weave-console`), then the directory this crate was compiled from.
fn find_workspace_root() -> Option<PathBuf> {
    let mut starts: Vec<PathBuf> = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        starts.push(cwd);
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        starts.push(dir);
    }
    starts.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    starts
        .iter()
        .flat_map(|start| start.ancestors())
        .find(|dir| is_workspace_root(dir))
        .map(|dir| dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()))
}

fn resolve_dirs(public: Option<PathBuf>) -> Result<(PathBuf, Option<PathBuf>), String> {
    let public = match public {
        Some(p) => p,
        None => find_workspace_root()
            .map(|root| root.join("public"))
            .ok_or_else(|| {
                "cannot find the workspace's public/ directory; pass --public DIR".to_string()
            })?,
    };
    if !public.is_dir() {
        return Err(format!(
            "public directory `{}` does not exist",
            public.display()
        ));
    }
    let style = public
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().map(|parent| parent.join("style")))
        .filter(|s| s.is_dir());
    Ok((public, style))
}

/// The protocol core's conformance, run once at start-up and shown on the console's front page:
/// `{"bundles": [{"bundle", "passed", "failed", "failures": [{case, expected, got}]}]}`, or
/// `{"error": …}` when the bundle cannot be found. No path reaches it: the bundle's location
/// (and why it was not found) goes to the log, and any mention of it in a failure is replaced.
pub fn conformance_json(root: Result<PathBuf, String>) -> String {
    use wasm_core::json::{Object, Value};
    let mut out = Object::new();
    match root {
        Err(e) => {
            tracing::warn!(reason = %e, "no protocol bundle: conformance not run");
            out.insert("error", Value::string(BUNDLE_MISSING));
        }
        Ok(root) => {
            tracing::info!(bundle = %root.display(), "running the protocol core's conformance");
            let hide = |text: &str| hide_paths(text, &root);
            let read = super::conformance::reader(root.clone());
            let reports = [
                wasm_core::conformance::run_structural(&read),
                wasm_core::conformance::run_cryptography(&read),
                wasm_core::conformance::run_admission(&read),
            ];
            let bundles = reports
                .iter()
                .map(|r| {
                    let mut b = Object::new();
                    b.insert("bundle", Value::string(r.bundle));
                    b.insert("passed", Value::from(r.passed as u64));
                    b.insert("failed", Value::from(r.failed() as u64));
                    let failures = r
                        .failures
                        .iter()
                        .map(|f| {
                            let mut o = Object::new();
                            o.insert("case", Value::string(hide(&f.case)));
                            o.insert("expected", Value::string(hide(&f.expected)));
                            o.insert("got", Value::string(hide(&f.got)));
                            Value::Object(o)
                        })
                        .collect();
                    b.insert("failures", Value::Array(failures));
                    Value::Object(b)
                })
                .collect();
            out.insert("bundles", Value::Array(bundles));
        }
    }
    wasm_core::json::to_string(&Value::Object(out))
}

/// `text` with the bundle's location (as given and absolute) replaced by `<bundle>`.
fn hide_paths(text: &str, root: &Path) -> String {
    let mut out = text.to_owned();
    let absolute = root.canonicalize().ok();
    for p in [Some(root), absolute.as_deref()].into_iter().flatten() {
        let p = p.display().to_string();
        if !p.is_empty() && p != "." {
            out = out.replace(&p, "<bundle>");
        }
    }
    out
}

/// `POST /api/commands`: one signed Command in, its Events (once durable) or a wire error out.
async fn post_command(
    State(handle): State<AuthorityHandle>,
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
    match handle.submit(body.to_vec()).await {
        Reply::Done(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
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

/// The console's routes, each request cut after `timeout` and logged (method, path, status,
/// latency).
pub(crate) fn router(
    public: &Path,
    style: Option<&Path>,
    conformance: String,
    authority: Option<AuthorityHandle>,
    timeout: Duration,
) -> Router {
    let conformance: std::sync::Arc<str> = conformance.into();
    let mut app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/api/core/conformance",
            get(move || {
                let body = conformance.to_string();
                async move { ([(header::CONTENT_TYPE, "application/json")], body) }
            }),
        );
    if let Some(handle) = authority {
        app = app.route(
            "/api/commands",
            axum::routing::post(post_command)
                .with_state(handle)
                .layer(DefaultBodyLimit::max(MAX_COMMAND_BYTES)),
        );
    }
    if let Some(style) = style {
        app = app.nest_service("/style", ServeDir::new(style));
    }
    app.fallback_service(ServeDir::new(public))
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
                    tracing::info_span!("request", method = %req.method(), path = %req.uri().path())
                })
                .on_request(())
                .on_response(|r: &Response, latency: Duration, _: &tracing::Span| {
                    tracing::info!(
                        status = r.status().as_u16(),
                        latency = ?latency,
                        "answered"
                    );
                })
                .on_failure(()),
        )
}

/// Logs to stderr (stdout keeps the lines scripts parse), filtered by `RUST_LOG`, default
/// `info`.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            // No Ctrl-C handler available: rely on SIGTERM only.
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sig) => {
                sig.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    eprintln!("weave-console: shutting down");
}

async fn serve(addr: &str, app: Router) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local: SocketAddr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    println!("weave-console listening on http://{local}");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(|e| format!("server error: {e}"))
}

pub fn run(args: &[String]) -> ExitCode {
    let opts = match parse(args, std::env::var("WEAVE_ADDR").ok()) {
        Ok(Parsed::Help) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Run(opts)) => opts,
        Err(msg) => return usage_error(&msg),
    };
    let (public, style) = match resolve_dirs(opts.public) {
        Ok(dirs) => dirs,
        Err(msg) => {
            eprintln!("weave-console: {msg}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("weave-console: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    init_logging();
    let conformance = conformance_json(super::conformance::protocol_root(None));
    let org = match &opts.registry {
        Some((registry, key)) => crate::devorg::from_deployment(registry, key),
        None => crate::devorg::load_or_create(&opts.data).and_then(|o| o.setup()),
    };
    let org = match org {
        Ok(o) => o,
        Err(e) => {
            eprintln!("weave-console: {e}");
            return ExitCode::FAILURE;
        }
    };
    let authority = match crate::runtime::start(&opts.data, org) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("weave-console: cannot start the authority: {e}");
            return ExitCode::FAILURE;
        }
    };
    let app = router(
        &public,
        style.as_deref(),
        conformance,
        Some(authority),
        REQUEST_TIMEOUT,
    );
    match runtime.block_on(serve(&opts.addr, app)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("weave-console: {msg}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    fn opts(args: &[&str], env: Option<&str>) -> Result<Options, String> {
        match parse(&strings(args), env.map(str::to_string))? {
            Parsed::Run(o) => Ok(o),
            Parsed::Help => Err("help".into()),
        }
    }

    #[test]
    fn defaults_and_env() {
        assert_eq!(
            opts(&[], None).map(|o| o.addr),
            Ok(DEFAULT_ADDR.to_string())
        );
        assert_eq!(
            opts(&[], Some("0.0.0.0:9")).map(|o| o.addr),
            Ok("0.0.0.0:9".to_string())
        );
        assert_eq!(
            opts(&["--addr", "127.0.0.1:1"], Some("0.0.0.0:9")).map(|o| o.addr),
            Ok("127.0.0.1:1".to_string())
        );
    }

    #[test]
    fn flags() {
        let o = opts(&["--addr=1.2.3.4:5", "--public", "x", "--data", "d"], None);
        assert_eq!(
            o,
            Ok(Options {
                addr: "1.2.3.4:5".into(),
                public: Some(PathBuf::from("x")),
                data: PathBuf::from("d"),
                registry: None,
            })
        );
        assert!(opts(&["--bogus"], None).is_err());
        assert!(opts(&["stray"], None).is_err());
        assert!(opts(&["--addr"], None).is_err());
        assert_eq!(opts(&["--help"], None), Err("help".into()));
    }

    #[test]
    fn finds_the_workspace_public_dir() {
        let (public, style) = resolve_dirs(None).expect("workspace public/ is found");
        assert!(public.join("index.html").is_file());
        assert!(style.is_some_and(|s| s.join("console.css").is_file()));
    }
}

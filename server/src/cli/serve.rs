//! `weave-console serve`: serves the static console (`public/`, plus `style/` under `/style`),
//! `GET /healthz`, `POST /api/commands` and the WebSocket binding at `/ws` (§17; TLS 1.3 on
//! every non-loopback address), until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use axum::Router;

use crate::gateway::tls::{self, TlsSetup};
use crate::gateway::{Gateway, GatewayConfig, Hub, ServiceKey};
use std::sync::Arc;

const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// `weave-console serve`: `POST /api/commands` takes one signed Command (JSON) and answers,
/// once durable, with the Events it appended (or the original ones for an exact retry) or a
/// wire error. The `style/` directory next to the public directory is served under `/style`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Listen address.
    #[arg(long, value_name = "HOST:PORT", env = "WEAVE_ADDR", default_value = DEFAULT_ADDR)]
    pub addr: String,
    /// Static files to serve (default: public/ of the workspace).
    #[arg(long, value_name = "DIR")]
    pub public: Option<PathBuf>,
    /// The embedded authority's durable store and the development Organization.
    #[arg(long, value_name = "DIR", env = "WEAVE_DATA", default_value = "data")]
    pub data: PathBuf,
    /// A deployment's own Registry evidence (the bundle's Registry-fixture shape) instead of
    /// the development Organization (with `--authority-key`); with `--upstream`, the Registry
    /// the console verifies the upstream's Events with (`GET /api/registry`).
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// `{keyId, seed}`: the Group Authority key, bound in the Registry to an Organization
    /// service Principal.
    #[arg(long, value_name = "FILE", requires = "registry")]
    pub authority_key: Option<PathBuf>,
    /// Serve TLS 1.3 (`https://`, `wss://`) on a loopback address too; every other address
    /// always gets TLS (§17.1).
    #[arg(long)]
    pub tls: bool,
    /// PEM certificate chain for TLS (default: a development certificate generated under
    /// the data directory, its SHA-256 fingerprint printed).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for `--tls-cert`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Do not run the §22 demo (simulated Agents on two Missions) in the server (it never
    /// runs with --dev-clock or --upstream).
    #[arg(long)]
    pub no_demo: bool,
    /// Relay `/ws` to this MissionWeaveProtocol endpoint (`wss://HOST/ws`) instead of running
    /// an authority here: frames are copied unchanged both ways, `/api/commands` answers 503,
    /// static files are still served (docs/binding.md, "The proxy").
    #[arg(long, value_name = "URL", conflicts_with_all = ["authority_key", "dev_clock"])]
    pub upstream: Option<String>,
    /// With `--upstream` to another `weave-console`: relay the console's HTTP reads (its
    /// Registry, Agent Cards, Group list, Artifacts) and its enrolment to the upstream.
    #[arg(long, requires = "upstream", conflicts_with = "registry")]
    pub registry_from_upstream: bool,
    /// The PEM certificate(s) to trust for a `wss://` upstream (a development server's
    /// `DATA/tls/dev-cert.pem`).
    #[arg(long, value_name = "FILE", requires = "upstream")]
    pub upstream_ca: Option<PathBuf>,
    /// Development only: the authority decides at a clock set by `PUT /api/dev/clock`
    /// (`scenarios --url` replays the behavioural suite at its own times). Loopback addresses
    /// and the development Organization only; a new data directory also gets the scenario
    /// pool of Principals (README, "The behavioural suite over the binding").
    #[arg(long, conflicts_with_all = ["registry", "authority_key"])]
    pub dev_clock: bool,
    /// The development Organization's Message rate limit per actor and Group (§20
    /// cooperation limits; default 120). `bench gateway` lifts it so its load is not
    /// throttled, as `bench authority` does.
    #[arg(long, value_name = "N", conflicts_with_all = ["registry", "authority_key"],
          value_parser = clap::value_parser!(u64).range(1..))]
    pub message_rate_per_minute: Option<u64>,
    /// Serve the development Organization (its enrolment, `/api/dev/*`, the demo's keys in
    /// `organization.json`) on a non-loopback address. Development only: whoever holds the
    /// printed enrolment token can sign as the demo's humans.
    #[arg(long, conflicts_with_all = ["registry", "authority_key", "upstream"])]
    pub dev_open: bool,
    /// On a non-loopback address without `--tls-cert/--tls-key`: serve the self-signed
    /// development certificate (browsers warn; Agents must pin it).
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"])]
    pub dev_cert: bool,
    /// A host name this server answers to besides the loopback names and the listen address
    /// (repeatable): the name clients use, e.g. behind a reverse proxy. Other `Host`s get 421.
    #[arg(long, value_name = "NAME")]
    pub allowed_host: Vec<String>,
    /// An origin (`https://NAME[:PORT]`) besides this server's own whose pages may change state
    /// and open `/ws` (repeatable), e.g. a reverse proxy's public origin.
    #[arg(long, value_name = "ORIGIN")]
    pub allowed_origin: Vec<String>,
    /// Open connections at most, plain and TLS alike; one more is closed at once and counted
    /// in the log (docs/binding.md, "Bounded under abuse").
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: u64,
    /// Open connections from one client address at most.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections_per_address: u64,
    /// Seconds a request head may take (for a new connection: its TLS handshake and first
    /// request); a slowloris is cut after it.
    #[arg(long, value_name = "S", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_read_timeout: u64,
    /// Seconds a connection still speaking HTTP may stay without a byte either way.
    #[arg(long, value_name = "S", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout: u64,
    /// Authenticated `/ws` connections of one principal at once, at most; the next HELLO is
    /// refused.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..))]
    pub sessions_per_principal: u64,
    /// A cluster node over this PostgreSQL database (`postgres://USER@HOST:PORT/DB`) instead
    /// of the data directory's SQLite store: one writer elected among the nodes, every node
    /// serving clients (docs/cluster.md). The nodes share the data directory's Organization.
    #[arg(
        long,
        value_name = "URL",
        env = "WEAVE_STORE",
        conflicts_with = "upstream"
    )]
    pub store: Option<String>,
    /// This node's name in the cluster (default: its listen address).
    #[arg(long, value_name = "NAME", requires = "store")]
    pub node: Option<String>,
    /// Where the other nodes reach this one to forward Commands (default: `http://` and the
    /// listen address).
    #[arg(long, value_name = "URL", requires = "store")]
    pub advertise: Option<String>,
    /// Milliseconds a writer may go without renewing its lease before another node takes
    /// over (the failover time is about this).
    #[arg(long, value_name = "MS", default_value_t = 3000, requires = "store",
          value_parser = clap::value_parser!(u64).range(300..))]
    pub lease_ms: u64,
    /// Serve `GET /metrics` (Prometheus text) and `GET /readyz` on this operator address, plain
    /// HTTP, apart from the public listener (off unless given; docs/operations.md). Give a
    /// loopback or private address: it has no TLS and asks no credential.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "upstream")]
    pub metrics_addr: Option<String>,
    /// The log's format on stderr: `text` (for a person) or `json` (one object per line, with
    /// a request id, the principal and the latency; never a key or a token).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// POST a signed notice to this webhook for each new item awaiting a human (an execution
    /// gate, a final Mission approval), repeatable: `URL`, or `FILTER,…@URL` with the filters
    /// `gate`, `final`, `mission=ID` (docs/notifications.md). Plain `http://` only to a
    /// loopback host unless `--notify-allow-http`.
    #[arg(long, value_name = "[FILTER,…@]URL", conflicts_with = "upstream")]
    pub notify_webhook: Vec<String>,
    /// The console's public URL for the notices' links (default: this server's own).
    #[arg(long, value_name = "URL", requires = "notify_webhook")]
    pub notify_link_base: Option<String>,
    /// The PEM certificates an `https://` webhook is checked against (default: the
    /// system's bundle).
    #[arg(long, value_name = "FILE", requires = "notify_webhook")]
    pub notify_ca: Option<PathBuf>,
    /// Let `--notify-webhook` use plain `http://` to a host that is not loopback (the
    /// notice then crosses the network in clear; it is signed, not secret).
    #[arg(long, requires = "notify_webhook")]
    pub notify_allow_http: bool,
}

/// `serve --log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// The environment variable that fixes the development enrolment token (scripts that open the
/// console with it); otherwise each start draws a new one.
pub const DEV_TOKEN_ENV: &str = "WEAVE_DEV_TOKEN";

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
            .map(|root| crate::console::app_dir(&root))
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

/// Logs to stderr (stdout keeps the lines scripts parse), filtered by `RUST_LOG`, default
/// `info`; with `--log-format json` one JSON object per line, the spans' fields (the request
/// id, the principal) in each.
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .try_init(),
    };
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

/// How the listener is secured: TLS 1.3 on every non-loopback address, and on loopback with
/// `--tls` (§17.1).
fn tls_for(opts: &ServeArgs, local: &SocketAddr) -> Result<Option<TlsSetup>, String> {
    if !opts.tls && opts.tls_cert.is_none() && tls::is_loopback(local) {
        return Ok(None);
    }
    if let (Some(cert), Some(key)) = (&opts.tls_cert, &opts.tls_key) {
        return tls::from_files(cert, key).map(Some);
    }
    if !tls::is_loopback(local) && !opts.dev_cert {
        return Err(format!(
            "{local} is not a loopback address: give the certificate clients will trust              (--tls-cert FILE --tls-key FILE), or --dev-cert for the self-signed development              certificate"
        ));
    }
    let (setup, path, created) = tls::development(&opts.data, listen_host(&opts.addr))?;
    println!(
        "weave-console: TLS development certificate {}{}, SHA-256 fingerprint {}",
        path.display(),
        if created { " (new)" } else { "" },
        tls::fingerprint(setup.leaf.as_ref())
    );
    Ok(Some(setup))
}

/// A line on stdout that a closed stdout cannot turn into a panic: after the `listening on`
/// line a script (or a test) may stop reading, and `println!` would then take the server down
/// with it (EPIPE).
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

/// The host part of `--addr` (`HOST:PORT`, `[V6]:PORT`).
fn listen_host(addr: &str) -> &str {
    addr.rsplit_once(':')
        .map_or(addr, |(h, _)| h)
        .trim_matches(['[', ']'])
}

/// Whether every address `--addr` names is a loopback one (a name is resolved).
fn listens_on_loopback(addr: &str) -> Result<bool, String> {
    use std::net::ToSocketAddrs;
    let all: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| format!("--addr {addr}: {e}"))?
        .collect();
    Ok(!all.is_empty() && all.iter().all(tls::is_loopback))
}

/// Refuses to serve the development Organization off loopback unless `--dev-open` says so
/// (issue 26): its enrolment token and `/api/dev/*` are for the person at this machine.
fn dev_exposure(opts: &ServeArgs, dev: bool) -> Result<(), String> {
    if listens_on_loopback(&opts.addr)? {
        return Ok(());
    }
    if opts.dev_clock {
        return Err(format!(
            "--dev-clock lets any client set the authority's time: loopback addresses only, \
             not {}",
            opts.addr
        ));
    }
    if opts.tls_cert.is_none() && !opts.dev_cert {
        // Checked again where the listener is made (`tls_for`); here before anything is
        // created under the data directory.
        return Err(format!(
            "{} is not a loopback address: give the certificate clients will trust \
             (--tls-cert FILE --tls-key FILE), or --dev-cert for the self-signed development \
             certificate",
            opts.addr
        ));
    }
    if !dev {
        return Ok(());
    }
    if !opts.dev_open {
        return Err(format!(
            "{} is not a loopback address, and this server would serve the development \
             Organization there (every Agent's private key in organization.json, and humans \
             enrolled by whoever holds the printed token). Serve your own Organization \
             (--registry FILE --authority-key FILE; docs/security.md), or pass --dev-open to \
             expose the development one anyway",
            opts.addr
        ));
    }
    eprintln!(
        "weave-console: WARNING: --dev-open: the development Organization is served on {}; \
         whoever holds the enrolment token printed below can sign as its humans. For \
         development only.",
        opts.addr
    );
    Ok(())
}

/// The edge's policy for this listener (`guard.rs`).
fn edge_policy(opts: &ServeArgs, tls: bool) -> crate::guard::EdgePolicy {
    crate::guard::EdgePolicy::new(
        listen_host(&opts.addr),
        &opts.allowed_host,
        &opts.allowed_origin,
        tls,
    )
}

async fn serve(
    opts: &ServeArgs,
    app: Router,
    demo: Option<crate::agents::Launch>,
    dev_token: Option<&str>,
    cluster: Option<(
        Arc<std::sync::OnceLock<String>>,
        Arc<crate::cluster::forward::Router>,
    )>,
    notifier: Option<Arc<crate::notify::Notifier>>,
) -> Result<(), String> {
    let listener = std::net::TcpListener::bind(&opts.addr)
        .map_err(|e| format!("cannot listen on {}: {e}", opts.addr))?;
    let local: SocketAddr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    let tls = tls_for(opts, &local)?;
    if let Some((slot, router)) = cluster {
        // Nodes forward to one another as clients do: over TLS when this node serves it,
        // trusting the certificate the nodes share.
        if let Some(t) = &tls {
            router.pin(t.leaf.clone())?;
        }
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = opts
            .advertise
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{local}"));
        say!(
            "weave-console: cluster node {} reachable at {url}",
            opts.node.as_deref().unwrap_or(&opts.addr)
        );
        let _ = slot.set(url);
    }
    if opts.dev_clock && !tls::is_loopback(&local) {
        return Err(format!(
            "--dev-clock lets any client set the authority's time: loopback addresses only, \
             not {local}"
        ));
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    let policy = edge_policy(opts, tls.is_some());
    if policy.any_host() {
        say!(
            "weave-console: answering to any host name on {local}; name yours with \
             --allowed-host NAME"
        );
    }
    let app = app.layer(axum::middleware::from_fn_with_state(
        Arc::new(policy),
        crate::guard::edge,
    ));
    if let Some(n) = &notifier {
        n.link_base_default(&format!("{scheme}://{local}"));
    }
    say!("weave-console listening on {scheme}://{local}");
    if let Some(token) = dev_token {
        // The token goes in the fragment: a browser never sends it, so no log holds it.
        say!(
            "weave-console: sign in as the demo's MissionOwner (it waits for their decisions): \
             {scheme}://{local}/join#token={token}&name={}",
            simulation::agents::plan::HUMAN
        );
        say!("weave-console: development enrolment token: {token}");
    }
    if let Some(demo) = demo {
        // The demo's Agents connect here like any external Agent (trusting this server's
        // certificate when it speaks TLS).
        match crate::agents::endpoint_for(local, tls.as_ref().map(|t| t.leaf.clone())) {
            Ok(ep) => demo.start(ep),
            Err(e) => say!("demo: off: {e}"),
        }
    }
    let limits = crate::gateway::listen::ListenLimits::from_flags(
        opts.max_connections,
        opts.max_connections_per_address,
        opts.header_read_timeout,
        opts.idle_timeout,
    );
    tls::serve_limited(
        listener,
        app,
        tls.map(|t| t.config),
        limits,
        shutdown_signal(),
    )
    .await
}

/// The notifier of `--notify-webhook`, signing with the Organization's service key (the
/// authority's), or none without a webhook.
fn notifier_for(
    opts: &ServeArgs,
    keys: &crate::service_keys::ServiceKeys,
    rt: &tokio::runtime::Handle,
) -> Result<Option<Arc<crate::notify::Notifier>>, String> {
    if opts.notify_webhook.is_empty() {
        return Ok(None);
    }
    let hooks = opts
        .notify_webhook
        .iter()
        .map(|s| crate::notify::parse_webhook(s, opts.notify_allow_http))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--notify-webhook {e}"))?;
    let tls = if hooks.iter().any(|h| h.secure) {
        Some(crate::notify::roots(opts.notify_ca.as_deref())?)
    } else {
        None
    };
    for h in &hooks {
        say!(
            "weave-console: notices of items awaiting a human go to {}",
            h.url
        );
    }
    let n = crate::notify::Notifier::start(hooks, keys.clone(), tls, rt);
    if let Some(base) = &opts.notify_link_base {
        n.link_base_default(base);
    }
    Ok(Some(n))
}

/// `serve --upstream`: static files and the relay; no authority, no keys, no data directory.
fn run_proxy(
    opts: &ServeArgs,
    runtime: &tokio::runtime::Runtime,
    url: &str,
    public: &Path,
    style: Option<&Path>,
    conformance: String,
) -> ExitCode {
    let upstream = match crate::proxy::Upstream::new(url, opts.upstream_ca.as_deref()) {
        Ok(u) => Arc::new(u),
        Err(e) => {
            eprintln!("weave-console: {e}");
            return ExitCode::from(2);
        }
    };
    println!("weave-console: relaying /ws to {url} (no authority here)");
    let mut extra = crate::proxy::routes(Arc::clone(&upstream));
    if let Some(file) = &opts.registry {
        // The console verifies every Event: it needs the upstream Organization's Registry.
        let read = std::fs::read(file)
            .map_err(|e| e.to_string())
            .and_then(|b| wasm_core::json::parse(&b).map_err(|e| e.to_string()))
            .and_then(|v| {
                wasm_core::crypto::RegistryEvidence::from_registry_json(&v)
                    .map_err(|e| e.to_string())
            })
            .and_then(|e| {
                e.validate()
                    .map(|_| e)
                    .map_err(|e| format!("the Registry is invalid: {e}"))
            });
        match read {
            Ok(evidence) => {
                say!(
                    "weave-console: serving the Registry of {} from {} ({} bindings)",
                    evidence.organization_id,
                    file.display(),
                    evidence.bindings.len()
                );
                extra = extra.merge(crate::registry_api::routes(
                    &crate::registry_api::PublicRegistry::new(&evidence, &[]),
                ));
            }
            Err(e) => {
                eprintln!("weave-console: --registry {}: {e}", file.display());
                return ExitCode::from(2);
            }
        }
    } else if opts.registry_from_upstream {
        match crate::proxy::HttpRelay::new(&upstream) {
            Ok(relay) => {
                say!("weave-console: relaying the console's reads and enrolment to the upstream");
                extra = extra.merge(relay.routes());
            }
            Err(e) => {
                eprintln!("weave-console: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        say!(
            "weave-console: no Registry here: the console cannot verify Events (--registry FILE, \
             or --registry-from-upstream for an upstream weave-console)"
        );
    }
    let app = crate::http::router(
        crate::http::AppState::new(public, conformance)
            .style(style)
            .routes(extra),
    );
    match runtime.block_on(serve(opts, app, None, None, None, None)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("weave-console: {msg}");
            ExitCode::FAILURE
        }
    }
}

pub fn run(opts: ServeArgs) -> ExitCode {
    let started = std::time::Instant::now();
    let (public, style) = match resolve_dirs(opts.public.clone()) {
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
    init_logging(opts.log_format);
    // The operator's listener first: `/readyz` answers 503 while the store is replayed, and
    // the recorder is in place before anything records.
    let readiness = Arc::new(crate::ops::Readiness::default());
    let metrics = match &opts.metrics_addr {
        None => None,
        Some(addr) => {
            let started = crate::ops::Metrics::install().and_then(|m| {
                let app = crate::ops::routes(Arc::clone(&m), Arc::clone(&readiness));
                let local = runtime.block_on(crate::ops::serve(addr, app))?;
                let _guard = runtime.enter();
                m.spawn_upkeep();
                Ok((m, local))
            });
            match started {
                Ok((m, local)) => {
                    say!("weave-console: operator listener on http://{local} (/metrics, /readyz)");
                    Some(m)
                }
                Err(e) => {
                    eprintln!("weave-console: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    };
    if !public.join("pkg").is_dir() {
        tracing::warn!(
            "{} has no built console (pkg/): run scripts/build-web.sh",
            public.display()
        );
    }
    let bundle = crate::bundle::protocol_root(None);
    let conformance = crate::bundle::conformance_json(bundle.clone());
    if let Some(url) = &opts.upstream {
        return run_proxy(&opts, &runtime, url, &public, style.as_deref(), conformance);
    }
    // An Organization of `org init` in the data directory is served instead of the
    // development one.
    let own_org = opts.registry.is_none() && crate::org::OrgDir::exists(&opts.data);
    if own_org && (opts.dev_clock || opts.dev_open) {
        eprintln!(
            "weave-console: {} holds an Organization of `org init`: --dev-clock and --dev-open \
             are for the development Organization",
            opts.data.display()
        );
        return ExitCode::from(2);
    }
    if opts.registry.is_some() != opts.authority_key.is_some() {
        eprintln!(
            "weave-console: --registry and --authority-key go together (or --registry with \
             --upstream)"
        );
        return ExitCode::from(2);
    }
    let deployment = opts.registry.is_some() || own_org;
    if let Err(e) = dev_exposure(&opts, !deployment) {
        eprintln!("weave-console: {e}");
        return ExitCode::from(2);
    }
    let dev_token = if deployment {
        None
    } else {
        let token = match std::env::var(DEV_TOKEN_ENV) {
            Ok(text) => crate::enrol::DevToken::from_text(&text).map(|t| (t, text)),
            Err(_) => Ok(crate::enrol::DevToken::generate()),
        };
        match token {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("weave-console: {e}");
                return ExitCode::from(2);
            }
        }
    };
    if let Err(e) = crate::devorg::private_dir(&opts.data) {
        eprintln!("weave-console: {e}");
        return ExitCode::FAILURE;
    }
    let org = match (&opts.registry, &opts.authority_key) {
        (Some(registry), Some(key)) => crate::devorg::from_deployment(registry, key),
        _ if own_org => crate::org::setup(&opts.data),
        _ => crate::devorg::load_or_create_with(&opts.data, opts.dev_clock)
            .and_then(crate::cards::setup),
    };
    // Development keys enrolled from browsers (`POST /api/enrol`) join the Registry.
    let org = org.and_then(|mut o| {
        let enrolment = match (&o.dev, &dev_token) {
            (Some(_), Some((token, _))) => {
                let (registry, e) =
                    crate::enrol::Enrolment::development(&o.registry, &opts.data, token.clone())?;
                o.registry = registry;
                e
            }
            _ if own_org => crate::enrol::Enrolment::organization(&opts.data),
            _ => crate::enrol::Enrolment::refused(),
        };
        Ok((o, enrolment))
    });
    let (mut org, enrolment) = match org {
        Ok(o) => o,
        Err(e) => {
            eprintln!("weave-console: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(rate) = opts.message_rate_per_minute {
        org.config.limits.message_rate_per_minute = usize::try_from(rate).unwrap_or(usize::MAX);
    }
    let hub = Arc::new(Hub::new());
    // One set of service keys for everything that signs as the service (the authority, the
    // binding's HELLO, the webhooks): a rotation switches them all (crate::service_keys).
    let service_keys = org.service_keys.clone().unwrap_or_else(|| {
        crate::service_keys::ServiceKeys::single(&org.config.key_id, &org.config.seed)
    });
    org.service_keys = Some(service_keys.clone());
    let service = ServiceKey {
        actor: org.config.accepted_by.clone(),
        keys: service_keys.clone(),
    };
    let clock = match (&opts.store, opts.dev_clock) {
        (Some(url), true) => match crate::devclock::DevClock::shared(url) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                eprintln!("weave-console: the cluster's development clock: {e}");
                return ExitCode::FAILURE;
            }
        },
        _ => Arc::new(crate::devclock::DevClock::default()),
    };
    // Webhooks for the approvers not in the console (docs/notifications.md): a second
    // publisher beside the hub; on a cluster the writer alone announces.
    let notifier = match notifier_for(&opts, &service_keys, runtime.handle()) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("weave-console: {e}");
            return ExitCode::from(2);
        }
    };
    let publisher: Arc<dyn crate::runtime::Publish> = match (&notifier, &opts.store) {
        (Some(n), None) => Arc::new(crate::notify::Both(hub.clone(), n.clone())),
        _ => hub.clone(),
    };
    let mut demo = None;
    // Artifact content by hash, beside the Event store under the data directory.
    let artifacts = crate::artifacts::ArtifactStore::open(&opts.data);
    let mut advertise = None;
    let mut cluster_router = None;
    let authority = if let Some(url) = &opts.store {
        let slot = Arc::new(std::sync::OnceLock::new());
        advertise = Some(Arc::clone(&slot));
        let cfg = crate::cluster::ClusterConfig {
            url: url.clone(),
            node: opts.node.clone().unwrap_or_else(|| opts.addr.clone()),
            advertise: slot,
            lease: std::time::Duration::from_millis(opts.lease_ms),
            writer_publisher: notifier
                .clone()
                .map(|n| n as Arc<dyn crate::runtime::Publish>),
        };
        let c = Arc::clone(&clock);
        let shared: crate::cluster::SharedClock = if opts.dev_clock {
            Arc::new(move || c.now())
        } else {
            Arc::new(crate::runtime::now)
        };
        let rt = runtime.handle().clone();
        let mut node = |org, hook| {
            crate::cluster::node::start(
                cfg.clone(),
                org,
                Arc::clone(&shared),
                Some(Arc::clone(&publisher)),
                hook,
                rt.clone(),
            )
            .map(|s| {
                cluster_router = Some(s.router);
                s.handle
            })
        };
        if opts.no_demo || opts.dev_clock {
            node(org, None)
        } else {
            crate::agents::start_over(&opts.data, org, started, artifacts.clone(), &mut node).map(
                |(h, d)| {
                    demo = d;
                    h
                },
            )
        }
    } else if opts.dev_clock {
        println!(
            "weave-console: development clock: the authority decides at the time set by PUT \
             /api/dev/clock (development only; the demo is off)"
        );
        let c = Arc::clone(&clock);
        crate::runtime::start_full(
            &opts.data,
            org,
            Box::new(move || c.now()),
            Some(publisher),
            None,
        )
    } else if opts.no_demo {
        crate::runtime::start_publishing(&opts.data, org, publisher)
    } else {
        crate::agents::start(&opts.data, org, started, Some(publisher), artifacts.clone()).map(
            |(h, d)| {
                demo = d;
                h
            },
        )
    };
    let authority = match authority {
        Ok(h) => h,
        Err(e) => {
            eprintln!("weave-console: cannot start the authority: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The operator's local socket: `backup` asks the live authority for its projection hash
    // (a single node only: a cluster's nodes share the data directory; docs/operations.md).
    #[cfg(unix)]
    if opts.store.is_none() {
        let _guard = runtime.enter();
        match crate::ops::serve_local(&opts.data, authority.clone()) {
            Ok(path) => say!(
                "weave-console: operator socket {} (weave-console backup asks it)",
                path.display()
            ),
            Err(e) => eprintln!(
                "weave-console: warning: no operator socket ({e}); a backup of this data \
                 directory will not be checked against the running server"
            ),
        }
    }
    let gateway_config = GatewayConfig {
        sessions_per_principal: usize::try_from(opts.sessions_per_principal).unwrap_or(usize::MAX),
        ..GatewayConfig::default()
    };
    let gateway = match &opts.store {
        Some(url) => crate::cluster::pg::Reconnecting::connect(url)
            .and_then(|c| Ok((c, crate::cluster::pg::Reconnecting::connect(url)?)))
            .map(|(c, e)| {
                (
                    crate::store::cursors::CursorStore::over(Box::new(
                        crate::cluster::pg::PgCursors(c),
                    )),
                    crate::store::reader::EventReader::over(Box::new(
                        crate::cluster::pg::PgEvents(e),
                    )),
                )
            })
            .map_err(|e| e.to_string())
            .and_then(|(cursors, reader)| {
                Gateway::over(
                    gateway_config,
                    Arc::clone(&hub),
                    authority.clone(),
                    authority.live_registry(),
                    service,
                    cursors,
                    reader,
                )
            }),
        None => Gateway::new(
            gateway_config,
            Arc::clone(&hub),
            authority.clone(),
            authority.live_registry(),
            service,
            &opts.data,
        ),
    };
    if let Some(r) = &cluster_router {
        *r.own
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&hub));
    }
    let gateway = match gateway {
        Ok(g) => Arc::new(g),
        Err(e) => {
            eprintln!("weave-console: cannot start the gateway: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Enrolments take effect at once: the authority and the binding share one Registry.
    let enrolment = Arc::new(
        enrolment
            .running(authority.live_registry(), Arc::clone(&hub))
            .publishing(authority.public_registry().clone()),
    );
    if own_org {
        say!(
            "weave-console: serving the Organization of {} (invitations: weave-console org \
             invite human NAME --data {})",
            opts.data.display(),
            opts.data.display()
        );
        let (ready, registered) = tokio::sync::oneshot::channel();
        if let Some(d) = demo.as_mut() {
            d.after(registered);
        }
        let reload = Arc::clone(&enrolment);
        runtime.spawn(crate::org::watch(
            crate::org::OrgDir::new(&opts.data),
            move || reload.reload_org(),
            authority.clone(),
            service_keys.clone(),
            Some(ready),
        ));
    }
    if opts.store.is_some() && !own_org {
        // A cluster's nodes share the data directory: an enrolment on one is served by all.
        let reload = Arc::clone(&enrolment);
        let file = opts.data.join(crate::enrol::FILE);
        runtime.spawn(async move {
            let mut last = None;
            loop {
                let stamp = std::fs::metadata(&file)
                    .ok()
                    .map(|m| (m.modified().ok(), m.len()));
                if stamp != last {
                    last = stamp;
                    reload.reload_dev();
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        });
    }
    let health = authority.clone();
    let cluster_ready = cluster_router.as_ref().map(|r| Arc::clone(&r.ready));
    readiness.running(Arc::new(move || {
        if let Some(why) = health.failure() {
            return Err(why);
        }
        match &cluster_ready {
            Some(r) => r.state(),
            None => Ok(()),
        }
    }));
    if let Some(m) = &metrics {
        let hub = Arc::clone(&hub);
        m.collect(Box::new(move || {
            let g = hub.gauges();
            metrics::gauge!("mwp_sockets_open", "profile" => "human").set(g.humans as f64);
            metrics::gauge!("mwp_sockets_open", "profile" => "agent").set(g.agents as f64);
            metrics::gauge!("mwp_sockets_open", "profile" => "service").set(g.services as f64);
            metrics::gauge!("mwp_subscriptions").set(g.subscriptions as f64);
            metrics::gauge!("mwp_outbound_queued_frames").set(g.queued_frames as f64);
            metrics::gauge!("mwp_outbound_queued_bytes").set(g.queued_bytes as f64);
            metrics::gauge!("mwp_groups").set(g.groups as f64);
        }));
    }
    let ready = Arc::clone(&readiness);
    let mut extra = crate::console::protocol_routes(bundle.ok())
        .route(
            "/readyz",
            axum::routing::get(move || crate::ops::readyz(Arc::clone(&ready))),
        )
        .merge(crate::enrol::routes(enrolment))
        .merge(crate::artifacts::routes(
            artifacts,
            crate::artifacts::ReadAccess {
                registry: authority.live_registry(),
                members: hub.clone(),
            },
        ));
    if opts.dev_clock {
        extra = extra.merge(crate::devclock::routes(clock));
    }
    if let Some(d) = demo.as_ref().filter(|d| d.proposes()) {
        extra = extra.merge(crate::agents::cast::routes(
            d.proposals(),
            authority.live_registry(),
        ));
    }
    let app = crate::http::router(
        crate::http::AppState::new(&public, conformance)
            .style(style.as_deref())
            .authority(authority)
            .gateway(gateway)
            .routes(extra),
    );
    let token_text = dev_token.as_ref().map(|(_, text)| text.as_str());
    let cluster = advertise.zip(cluster_router);
    match runtime.block_on(serve(&opts, app, demo, token_text, cluster, notifier)) {
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

    fn opts(args: &[&str]) -> Result<ServeArgs, clap::Error> {
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            serve: ServeArgs,
        }
        use clap::Parser;
        Wrap::try_parse_from(std::iter::once("serve").chain(args.iter().copied())).map(|w| w.serve)
    }

    #[test]
    fn defaults_flags_and_pairs() {
        // (Environment fallbacks, WEAVE_ADDR and WEAVE_DATA, are clap's `env`; not set here.)
        let o = opts(&[]).expect("defaults");
        assert_eq!(o.addr, DEFAULT_ADDR);
        assert_eq!(o.data, PathBuf::from("data"));
        assert!(!o.no_demo, "the demo runs by default");
        assert!(opts(&["--no-demo"]).expect("--no-demo").no_demo);
        let o = opts(&["--addr=1.2.3.4:5", "--public", "x", "--data", "d"]).expect("flags");
        assert_eq!(
            (o.addr.as_str(), o.public, o.data),
            ("1.2.3.4:5", Some(PathBuf::from("x")), PathBuf::from("d"))
        );
        assert!(opts(&["--bogus"]).is_err());
        assert!(opts(&["stray"]).is_err());
        assert!(opts(&["--addr"]).is_err());
        // --authority-key needs --registry (and `run` refuses --registry alone without
        // --upstream); --registry-from-upstream needs --upstream and no --registry.
        assert!(opts(&["--authority-key", "k"]).is_err());
        assert!(opts(&["--upstream", "wss://h/ws", "--registry", "r"]).is_ok());
        assert!(opts(&["--registry-from-upstream"]).is_err());
        assert!(
            opts(&[
                "--upstream",
                "ws://127.0.0.1:1/ws",
                "--registry-from-upstream",
                "--registry",
                "r"
            ])
            .is_err()
        );
        assert!(opts(&["--registry", "r", "--authority-key", "k"]).is_ok());
        // TLS: --tls alone; --tls-cert and --tls-key together.
        let o = opts(&["--tls"]).expect("tls");
        assert!(o.tls && o.tls_cert.is_none());
        assert!(!opts(&[]).expect("defaults").tls);
        assert!(opts(&["--tls-cert", "c"]).is_err());
        assert!(opts(&["--tls-key", "k"]).is_err());
        let o = opts(&["--tls-cert", "c", "--tls-key", "k"]).expect("pair");
        assert_eq!(o.tls_cert, Some(PathBuf::from("c")));
    }

    #[test]
    fn tls_is_off_on_loopback_unless_asked_and_on_everywhere_else() {
        let dir = std::env::temp_dir().join(format!("weave-serve-tls-{}", std::process::id()));
        let data = dir.to_string_lossy().into_owned();
        let lo: SocketAddr = "127.0.0.1:8080".parse().expect("addr");
        let any: SocketAddr = "0.0.0.0:8080".parse().expect("addr");
        let plain = opts(&["--data", &data]).expect("opts");
        assert!(tls_for(&plain, &lo).expect("plain").is_none());
        let forced = opts(&["--data", &data, "--tls"]).expect("opts");
        assert!(tls_for(&forced, &lo).expect("tls").is_some());
        // Off loopback without a certificate: refused unless the development one is asked for.
        let public = opts(&["--data", &data, "--addr", "0.0.0.0:8080"]).expect("opts");
        let refused = tls_for(&public, &any).err().expect("no certificate given");
        assert!(
            refused.contains("--tls-cert") && refused.contains("--dev-cert"),
            "{refused}"
        );
        let public =
            opts(&["--data", &data, "--addr", "0.0.0.0:8080", "--dev-cert"]).expect("opts");
        assert!(tls_for(&public, &any).expect("tls").is_some());
        // The development certificate was made once, under the data directory.
        assert!(dir.join("tls").join("dev-cert.pem").is_file());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `--tls-cert` and `--tls-key` are served as given, on loopback too, and no development
    /// certificate is made; a key that is not PEM is refused.
    #[test]
    fn a_given_certificate_is_served_instead_of_the_development_one() {
        let dir = std::env::temp_dir().join(format!("weave-serve-cert-{}", std::process::id()));
        let data = dir.join("data");
        std::fs::create_dir_all(&dir).expect("dir");
        let ck = rcgen::generate_simple_self_signed(vec!["deploy.example".to_owned()])
            .expect("certificate");
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, ck.cert.pem()).expect("cert");
        std::fs::write(&key, ck.signing_key.serialize_pem()).expect("key");
        let given = |addr: &str, key: &std::path::Path| {
            let args = [
                "--data",
                data.to_str().expect("utf-8"),
                "--addr",
                addr,
                "--tls-cert",
                cert.to_str().expect("utf-8"),
                "--tls-key",
                key.to_str().expect("utf-8"),
            ];
            let o = opts(&args).expect("opts");
            tls_for(&o, &addr.parse().expect("addr"))
        };
        for addr in ["127.0.0.1:8443", "0.0.0.0:8443"] {
            let setup = given(addr, &key).expect("served").expect("TLS");
            assert_eq!(setup.leaf.as_ref(), ck.cert.der().as_ref(), "{addr}");
        }
        assert!(!data.join("tls").exists(), "no development certificate");
        assert!(
            given("0.0.0.0:8443", &cert).is_err(),
            "a certificate is no key"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The attack: `serve --addr 0.0.0.0:8080` on a development data directory put every
    /// demo Agent's key and the human enrolment on the network. It is refused now unless
    /// `--dev-open` says so; loopback and a deployment's own Organization are not affected.
    #[test]
    fn the_development_organization_stays_on_loopback_unless_opened() {
        let dev_off = opts(&["--addr", "0.0.0.0:8080", "--dev-cert"]).expect("opts");
        let e = dev_exposure(&dev_off, true).expect_err("refused off loopback");
        assert!(e.contains("--dev-open") && e.contains("--registry"), "{e}");
        let lan = opts(&["--addr", "192.0.2.7:8080", "--dev-cert"]).expect("opts");
        assert!(dev_exposure(&lan, true).is_err());
        let opened = opts(&["--addr", "0.0.0.0:8080", "--dev-open", "--dev-cert"]).expect("opts");
        assert!(dev_exposure(&opened, true).is_ok());
        // Off loopback, a certificate is needed first, whoever's Organization it is.
        let no_cert = opts(&["--addr", "0.0.0.0:8080", "--dev-open"]).expect("opts");
        assert!(
            dev_exposure(&no_cert, true)
                .expect_err("no cert")
                .contains("--dev-cert")
        );
        let deployment = opts(&["--addr", "0.0.0.0:8080"]).expect("opts");
        assert!(dev_exposure(&deployment, false).is_err());
        for lo in ["127.0.0.1:8080", "[::1]:8080", "localhost:8080"] {
            assert!(
                dev_exposure(&opts(&["--addr", lo]).expect("opts"), true).is_ok(),
                "{lo}"
            );
        }
        assert!(
            dev_exposure(&dev_off, false).is_ok(),
            "a deployment's own Organization"
        );
        // --dev-open is for the development Organization only.
        assert!(opts(&["--dev-open", "--registry", "r", "--authority-key", "k"]).is_err());
        assert!(opts(&["--dev-cert", "--tls-cert", "c", "--tls-key", "k"]).is_err());
        let o =
            opts(&["--allowed-host", "a.example", "--allowed-host", "b.example"]).expect("opts");
        assert_eq!(o.allowed_host, ["a.example", "b.example"]);
    }

    #[test]
    fn finds_the_workspace_public_dir() {
        let (public, style) = resolve_dirs(None).expect("workspace public/ is found");
        assert!(public.join("index.html").is_file());
        assert!(style.is_some_and(|s| s.join("console.css").is_file()));
    }
}

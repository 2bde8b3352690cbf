//! `serve --upstream wss://HOST/ws`: a relay in front of another MissionWeaveProtocol endpoint.
//! The browser keeps talking to our origin (static files, `/ws`); each `/ws` connection is
//! paired with one upstream connection and every data frame is copied unchanged, text as text
//! and binary as binary, in both directions (§17.1: one JSON text per message, so a frame is a
//! message and nothing is re-encoded). The proxy adds no authority of its own: it runs no
//! authority, holds no key, never answers a frame itself and never opens a Session for
//! anyone (§6.3 binds a session to the client's own HELLO signature, which a relay cannot
//! make). Design and reconnect rule: docs/binding.md, "The proxy".
//!
//! Reconnect: when the upstream drops, the browser's socket is closed with code 1012
//! (Service Restart). A session cannot move to a new upstream connection without a new HELLO
//! (signed by the client), so the client reconnects to the proxy, says HELLO again and
//! resumes with `SUBSCRIBE afterSequence` = the last sequence it holds per Group; replay
//! comes from the upstream's durable log, so nothing is skipped (§16).

use axum::extract::State;
use axum::extract::ws::{self, CloseFrame, WebSocket, WebSocketUpgrade};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message as Up;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};
use wasm_core::model::error::ErrorCode;

use crate::gateway::{CLOSE_GRACE, MAX_FRAME_BYTES};
use crate::wire::WireError;

/// Close code sent to the browser when the upstream connection ends without a close frame of
/// its own (RFC 6455 registry: 1012 Service Restart, "reconnect").
pub const CLOSE_UPSTREAM_GONE: u16 = 1012;

/// How long one relayed message may take to be sent to either side. A side that stops
/// reading blocks the relay in that send; past this bound the pair is dropped, instead of the
/// relay waiting forever (and missing the other side's close meanwhile). Generous: a reading
/// peer takes a 1 MiB frame far sooner.
pub const RELAY_SEND_LIMIT: Duration = Duration::from_secs(30);

/// Where the relay connects, and whom it trusts there.
#[derive(Clone)]
pub struct Upstream {
    /// `wss://HOST[:PORT]/ws` (or `ws://` to a loopback host).
    pub url: String,
    /// TLS trust for a `wss://` upstream (the pinned certificate of `--upstream-ca`).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// How long one relayed send may take ([`RELAY_SEND_LIMIT`]).
    pub send_limit: Duration,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("url", &self.url).finish()
    }
}

/// What `--upstream` and `--upstream-ca` can get wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyError {
    /// Not a `wss://…` (or loopback `ws://…`) URL.
    Url(String),
    /// `wss://` needs a certificate to trust.
    NoTrust,
    /// The CA file could not be read or holds no certificate.
    Ca(String),
}

impl std::fmt::Display for ProxyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxyError::Url(m) => write!(f, "--upstream: {m}"),
            ProxyError::NoTrust => write!(
                f,
                "--upstream wss://… needs --upstream-ca FILE: the PEM certificate the upstream \
                 serves (for a development server, its DATA/tls/dev-cert.pem)"
            ),
            ProxyError::Ca(m) => write!(f, "--upstream-ca: {m}"),
        }
    }
}

impl Upstream {
    /// Checks `url` and loads the trust for it. Plain `ws://` is accepted only for a loopback
    /// host (§17.1: TLS everywhere else).
    pub fn new(url: &str, ca: Option<&Path>) -> Result<Upstream, ProxyError> {
        let (secure, rest) = if let Some(r) = url.strip_prefix("wss://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("ws://") {
            (false, r)
        } else {
            return Err(ProxyError::Url(format!(
                "{url:?} is not a wss:// (or loopback ws://) URL"
            )));
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.is_empty() || authority.contains('@') {
            return Err(ProxyError::Url(format!("{url:?} names no host")));
        }
        if url.contains('?') || url.contains('#') {
            return Err(ProxyError::Url(format!(
                "{url:?}: give the endpoint without a query; the browser's query is passed on"
            )));
        }
        let host = host_of(authority);
        if !secure && !is_loopback_host(host) {
            return Err(ProxyError::Url(format!(
                "{url:?}: plain ws:// only to a loopback host; use wss://"
            )));
        }
        let tls = match (secure, ca) {
            (true, None) => return Err(ProxyError::NoTrust),
            (_, Some(ca)) => Some(trust(ca)?),
            (false, None) => None,
        };
        Ok(Upstream {
            url: url.to_owned(),
            tls,
            send_limit: RELAY_SEND_LIMIT,
        })
    }

    /// The upstream URL for a browser request: our endpoint's URL with the browser's query
    /// (`?principal=human` selects the human profile upstream too).
    fn url_for(&self, uri: &Uri) -> String {
        match uri.query() {
            Some(q) => format!("{}?{q}", self.url),
            None => self.url.clone(),
        }
    }

    async fn connect(&self, url: &str) -> Result<UpSocket, String> {
        let config = WebSocketConfig::default()
            .read_buffer_size(crate::gateway::READ_BUFFER)
            .max_message_size(Some(MAX_FRAME_BYTES))
            .max_frame_size(Some(MAX_FRAME_BYTES));
        let connector = self.tls.clone().map(Connector::Rustls);
        let (socket, _) =
            // No Nagle delay: frames are small and relayed one by one.
            tokio_tungstenite::connect_async_tls_with_config(url, Some(config), true, connector)
                .await
                .map_err(|e| e.to_string())?;
        Ok(socket)
    }
}

type UpSocket = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// `[v6]:port`, `host:port` or `host` → the host.
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

fn is_loopback_host(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A client configuration trusting exactly the certificates of `ca` (PEM), TLS 1.3 only.
pub fn trust(ca: &Path) -> Result<Arc<rustls::ClientConfig>, ProxyError> {
    let certs = CertificateDer::pem_file_iter(ca)
        .map_err(|e| ProxyError::Ca(format!("{}: {e}", ca.display())))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ProxyError::Ca(format!("{}: {e}", ca.display())))?;
    let mut roots = rustls::RootCertStore::empty();
    for c in certs {
        roots
            .add(c)
            .map_err(|e| ProxyError::Ca(format!("{}: {e}", ca.display())))?;
    }
    if roots.is_empty() {
        return Err(ProxyError::Ca(format!(
            "{} holds no certificate",
            ca.display()
        )));
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .map_err(|e| ProxyError::Ca(format!("TLS: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(config))
}

/// `GET /ws` in proxy mode: the upstream connection is opened first, so a browser whose
/// upstream cannot be reached gets `502` with a wire error document (retryable) instead of a
/// socket that opens and dies.
pub async fn relay(State(up): State<Arc<Upstream>>, uri: Uri, ws: WebSocketUpgrade) -> Response {
    let url = up.url_for(&uri);
    let upstream = match up.connect(&url).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(upstream = %up.url, cause = %e, "the upstream cannot be reached");
            return WireError::new(
                ErrorCode::Backpressure,
                "the upstream endpoint cannot be reached; retry after retryAfterMs",
            )
            .retry_after(1000)
            .with_status(StatusCode::BAD_GATEWAY)
            .into_response();
        }
    };
    ws.max_message_size(MAX_FRAME_BYTES)
        .max_frame_size(MAX_FRAME_BYTES)
        .read_buffer_size(crate::gateway::READ_BUFFER)
        .on_upgrade(move |browser| pump(browser, upstream, up.send_limit))
}

/// Copies data frames both ways until either side ends; the other side then gets a close
/// (the upstream's own close code when it sent one, 1012 when it just dropped), given at most
/// `CLOSE_GRACE` to be sent: a peer that does not read must not keep the pair alive. A data
/// message that cannot be sent within `send_limit` (its receiver stopped reading) drops both
/// sides at once.
async fn pump(browser: WebSocket, upstream: UpSocket, send_limit: Duration) {
    let (mut b_tx, mut b_rx) = browser.split();
    let (mut u_tx, mut u_rx) = upstream.split();
    let down = async {
        // Upstream → browser.
        loop {
            match u_rx.next().await {
                Some(Ok(Up::Text(t))) => {
                    let t = ws::Utf8Bytes::from(t.as_str());
                    if !sent(send_limit, b_tx.send(ws::Message::Text(t))).await {
                        return;
                    }
                }
                Some(Ok(Up::Binary(b))) => {
                    if !sent(send_limit, b_tx.send(ws::Message::Binary(b))).await {
                        return;
                    }
                }
                // Pings and pongs are per hop: each library answers its own.
                Some(Ok(Up::Ping(_) | Up::Pong(_) | Up::Frame(_))) => {}
                Some(Ok(Up::Close(c))) => {
                    let frame = c.map(|c| CloseFrame {
                        code: u16::from(c.code),
                        reason: ws::Utf8Bytes::from(c.reason.as_str()),
                    });
                    let close = b_tx.send(ws::Message::Close(Some(frame.unwrap_or(CloseFrame {
                        code: u16::from(CloseCode::Normal),
                        reason: ws::Utf8Bytes::from_static(""),
                    }))));
                    let _ = tokio::time::timeout(CLOSE_GRACE, close).await;
                    return;
                }
                None | Some(Err(_)) => {
                    let close = b_tx.send(ws::Message::Close(Some(CloseFrame {
                        code: CLOSE_UPSTREAM_GONE,
                        reason: ws::Utf8Bytes::from_static(
                            "upstream connection lost; reconnect, HELLO and SUBSCRIBE after \
                             your last sequence",
                        ),
                    })));
                    let _ = tokio::time::timeout(CLOSE_GRACE, close).await;
                    return;
                }
            }
        }
    };
    let up = async {
        // Browser → upstream.
        loop {
            match b_rx.next().await {
                Some(Ok(ws::Message::Text(t))) => {
                    if !sent(send_limit, u_tx.send(Up::Text(t.as_str().into()))).await {
                        return;
                    }
                }
                Some(Ok(ws::Message::Binary(b))) => {
                    if !sent(send_limit, u_tx.send(Up::Binary(b))).await {
                        return;
                    }
                }
                Some(Ok(ws::Message::Ping(_) | ws::Message::Pong(_))) => {}
                Some(Ok(ws::Message::Close(c))) => {
                    let frame = c.map(|c| tokio_tungstenite::tungstenite::protocol::CloseFrame {
                        code: CloseCode::from(c.code),
                        reason: c.reason.as_str().into(),
                    });
                    let _ = tokio::time::timeout(CLOSE_GRACE, u_tx.send(Up::Close(frame))).await;
                    return;
                }
                None | Some(Err(_)) => {
                    let _ = tokio::time::timeout(CLOSE_GRACE, u_tx.send(Up::Close(None))).await;
                    return;
                }
            }
        }
    };
    // Whichever direction ends first ends the pair.
    tokio::select! {
        () = down => {},
        () = up => {},
    }
}

/// Whether one relayed send completed within `limit`.
async fn sent<E>(limit: Duration, send: impl Future<Output = Result<(), E>>) -> bool {
    match tokio::time::timeout(limit, send).await {
        Ok(r) => r.is_ok(),
        Err(_) => {
            tracing::warn!("a relayed message was not taken in time; dropping the pair");
            false
        }
    }
}

/// `POST /api/commands` in proxy mode: there is no authority here.
pub async fn no_authority(State(up): State<Arc<Upstream>>) -> Response {
    WireError::new(
        ErrorCode::AuthForbidden,
        format!(
            "this server relays {} and holds no authority: send Commands as COMMAND frames \
             over /ws",
            up.url
        ),
    )
    .with_status(StatusCode::SERVICE_UNAVAILABLE)
    .into_response()
}

/// The routes of a proxy (`--upstream`): `/ws` relays, `/api/commands` answers that there is
/// no authority here, the rest is static.
pub fn routes(upstream: std::sync::Arc<Upstream>) -> axum::Router {
    axum::Router::new()
        .route("/ws", axum::routing::get(relay))
        .route("/api/commands", axum::routing::any(no_authority))
        .with_state(upstream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_urls_and_trust() {
        assert_eq!(
            Upstream::new("wss://127.0.0.1:9/ws", None).map(|_| ()),
            Err(ProxyError::NoTrust)
        );
        assert!(matches!(
            Upstream::new("ws://example.org/ws", None),
            Err(ProxyError::Url(m)) if m.contains("loopback")
        ));
        assert!(matches!(
            Upstream::new("https://127.0.0.1/ws", None),
            Err(ProxyError::Url(_))
        ));
        assert!(matches!(
            Upstream::new("ws://127.0.0.1:9/ws?principal=human", None),
            Err(ProxyError::Url(m)) if m.contains("query")
        ));
        assert!(matches!(
            Upstream::new("ws://user@127.0.0.1/ws", None),
            Err(ProxyError::Url(_))
        ));
        for ok in [
            "ws://127.0.0.1:9/ws",
            "ws://localhost:9/ws",
            "ws://[::1]:9/ws",
        ] {
            let u = Upstream::new(ok, None).expect(ok);
            assert!(u.tls.is_none());
        }
        assert!(matches!(
            Upstream::new("wss://h/ws", Some(Path::new("/nonexistent.pem"))),
            Err(ProxyError::Ca(_))
        ));
        // The browser's query is passed on.
        let u = Upstream::new("ws://127.0.0.1:9/ws", None).expect("url");
        let uri: Uri = "/ws?principal=human".parse().expect("uri");
        assert_eq!(u.url_for(&uri), "ws://127.0.0.1:9/ws?principal=human");
        let uri: Uri = "/ws".parse().expect("uri");
        assert_eq!(u.url_for(&uri), "ws://127.0.0.1:9/ws");
    }

    #[test]
    fn hosts() {
        assert_eq!(host_of("[::1]:8443"), "::1");
        assert_eq!(host_of("a.example:8443"), "a.example");
        assert_eq!(host_of("a.example"), "a.example");
        assert!(is_loopback_host("127.0.0.5"));
        assert!(is_loopback_host("::1"));
        assert!(!is_loopback_host("10.0.0.1"));
    }

    /// A browser that stops reading blocks the relay in a send to it; past `send_limit` the
    /// pair is dropped, so the upstream sees its connection end (before the bound, the relay
    /// waited forever and the upstream's socket lived on). Tiny socket buffers make the stall
    /// come quickly; the upstream floods until it does. Nothing asserts a duration.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_browser_that_stops_reading_drops_the_pair_after_the_send_limit() {
        use tokio_tungstenite::tungstenite::Message;
        const PATIENCE: Duration = Duration::from_secs(30);
        let payload = "x".repeat(64 * 1024);

        // The stand-in upstream: floods text messages until its socket fails, and reports
        // when its connection ends (read end or write error).
        let up_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let up_addr = up_listener.local_addr().expect("addr");
        let (ended_tx, mut ended) = tokio::sync::mpsc::channel::<&'static str>(2);
        let flood = payload.clone();
        let upstream = tokio::spawn(async move {
            let (tcp, _) = up_listener.accept().await.expect("accept");
            let ws = tokio_tungstenite::accept_async(tcp).await.expect("ws");
            let (mut tx, mut rx) = ws.split();
            let on_write = ended_tx.clone();
            let writer = tokio::spawn(async move {
                while tx.send(Message::Text(flood.as_str().into())).await.is_ok() {}
                let _ = on_write.send("write").await;
            });
            while let Some(Ok(_)) = rx.next().await {}
            let _ = ended_tx.send("read").await;
            let _ = writer.await;
        });

        // The proxy, its accepted sockets with a small send buffer.
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_send_buffer_size(4096).expect("SO_SNDBUF");
        socket
            .bind("127.0.0.1:0".parse().expect("addr"))
            .expect("bind");
        let listener = socket.listen(16).expect("listen");
        let proxy_addr = listener.local_addr().expect("addr");
        let mut up = Upstream::new(&format!("ws://{up_addr}/ws"), None).expect("upstream");
        up.send_limit = Duration::from_millis(200);
        let app = axum::Router::new()
            .route("/ws", axum::routing::get(relay))
            .with_state(Arc::new(up));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });

        // The browser: a tiny receive buffer; it reads one message (relayed unchanged), then
        // stops reading.
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_recv_buffer_size(2048).expect("SO_RCVBUF");
        let tcp = socket.connect(proxy_addr).await.expect("connect");
        let (mut browser, _) =
            tokio_tungstenite::client_async(format!("ws://{proxy_addr}/ws"), tcp)
                .await
                .expect("ws");
        let first = tokio::time::timeout(PATIENCE, browser.next())
            .await
            .expect("a message")
            .expect("open")
            .expect("readable");
        assert_eq!(first, Message::Text(payload.as_str().into()));

        let gone = tokio::time::timeout(PATIENCE, ended.recv()).await;
        assert!(
            matches!(gone, Ok(Some(_))),
            "the relay still holds the upstream while the browser does not read"
        );
        // The browser's side is dropped too: reading on reaches its end.
        let browser_end = tokio::time::timeout(PATIENCE, async {
            while let Some(Ok(_)) = browser.next().await {}
        })
        .await;
        assert!(browser_end.is_ok(), "the browser's socket is still open");
        server.abort();
        upstream.abort();
    }

    #[test]
    fn a_pem_file_without_certificates_is_refused() {
        let path = std::env::temp_dir().join(format!("weave-proxy-ca-{}", std::process::id()));
        std::fs::write(&path, "not a certificate\n").expect("write");
        assert!(matches!(trust(&path), Err(ProxyError::Ca(m)) if m.contains("no certificate")));
        let _ = std::fs::remove_file(&path);
    }
}

/// `serve --upstream … --registry-from-upstream`: the console's own HTTP reads and its
/// enrolment relayed to an upstream that is a `weave-console` too (`GET /api/registry`,
/// `/api/registry/agent-cards`, `/api/groups/…`, `/api/artifacts/…`, `POST /api/enrol`). The
/// signed-read headers pass unchanged (their signature covers the method and the path, which
/// the relay keeps), so the upstream decides who may read what; the relay adds nothing.
#[derive(Clone)]
pub struct HttpRelay {
    endpoint: crate::endpoint::Endpoint,
}

/// The headers a relayed request carries on (the signed read's; nothing else of the browser's).
const RELAYED_HEADERS: [&str; 3] = [
    wasm_core::crypto::request::KEY_HEADER,
    wasm_core::crypto::request::TIME_HEADER,
    wasm_core::crypto::request::SIGNATURE_HEADER,
];

impl HttpRelay {
    pub fn new(up: &Upstream) -> Result<HttpRelay, String> {
        Ok(HttpRelay {
            endpoint: crate::endpoint::Endpoint::with_config(&up.url, up.tls.clone())?,
        })
    }

    /// The routes relayed.
    pub fn routes(self) -> axum::Router {
        use axum::routing::{get, post};
        axum::Router::new()
            .route("/api/registry", get(relay_http))
            .route("/api/registry/agent-cards", get(relay_http))
            .route("/api/groups/{principal}", get(relay_http))
            .route("/api/artifacts/{hash}", get(relay_http))
            .route("/api/enrol", post(relay_http))
            .with_state(Arc::new(self))
            .layer(axum::extract::DefaultBodyLimit::max(4096))
    }
}

async fn relay_http(
    State(relay): State<Arc<HttpRelay>>,
    method: axum::http::Method,
    uri: Uri,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let carried: Vec<(&str, String)> = RELAYED_HEADERS
        .iter()
        .filter_map(|h| {
            headers
                .get(*h)
                .and_then(|v| v.to_str().ok())
                .map(|v| (*h, v.to_owned()))
        })
        .collect();
    match relay
        .endpoint
        .http_with(method.as_str(), uri.path(), &body, &carried)
        .await
    {
        Ok((status, body)) => {
            let json = !uri.path().starts_with("/api/artifacts/") || status >= 400;
            (
                StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
                [(
                    axum::http::header::CONTENT_TYPE,
                    if json {
                        "application/json"
                    } else {
                        "application/octet-stream"
                    },
                )],
                body,
            )
                .into_response()
        }
        Err(e) => {
            tracing::warn!(cause = %e, path = %uri.path(), "the upstream did not answer a relayed request");
            WireError::new(
                ErrorCode::Backpressure,
                "the upstream did not answer; try again",
            )
            .with_status(StatusCode::BAD_GATEWAY)
            .into_response()
        }
    }
}

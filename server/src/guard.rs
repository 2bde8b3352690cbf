//! The HTTP edge's own checks, run before any route (issue 26; docs/security.md):
//!
//! - **Host** (DNS rebinding): a page on `evil.example` whose name is made to resolve to
//!   127.0.0.1 reaches a loopback server as a *same-origin* page of `evil.example`. Every request
//!   must name, in `Host` (HTTP/1.1) or `:authority` (HTTP/2), a host this server answers to:
//!   the loopback names, the listen address's own host, and `--allowed-host` names. Otherwise
//!   421 Misdirected Request (400 when no host is named at all). A server listening on a
//!   wildcard address (`0.0.0.0`, `::`) without `--allowed-host` answers to any name: it speaks
//!   TLS there (§17.1), and a certificate for the real name is what a rebinding page lacks.
//! - **Origin** (cross-site requests): a request that changes state (any method but `GET`,
//!   `HEAD`, `OPTIONS`) and every WebSocket upgrade (`/ws`) carrying an `Origin` must come from
//!   this server's own origin (`scheme://host` of the request) or an `--allowed-origin`; else
//!   403, before any handler runs or any socket is upgraded. No `Origin` at all is a non-browser
//!   client (an Agent, `weave-console dev`), which proves itself by the signatures it carries.
//!   `Sec-Fetch-Site: cross-site` is refused too (a browser that sends it is telling the truth).
//! - **Content-Type**: a request that changes state must say `application/json`; a cross-site
//!   form can send `text/plain` without a CORS preflight, never `application/json`. Else 415.
//! - **HSTS** on every response over TLS (not for `localhost` names, where a year of HSTS would
//!   break the plain-HTTP development server on another port; browsers ignore it for IP
//!   literals anyway, RFC 6797 §8.1).

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use wasm_core::model::error::ErrorCode;

use crate::wire::WireError;

/// `Strict-Transport-Security` on TLS responses: one year.
pub const HSTS: &str = "max-age=31536000";

/// The loopback names every server answers to.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// What the edge accepts; built once at start from the listen address and the flags.
#[derive(Clone, Debug)]
pub struct EdgePolicy {
    /// Host names (lowercase, no port, no brackets) answered to; `None`: any.
    hosts: Option<Vec<String>>,
    /// Origins besides the request's own (`scheme://host[:port]`, lowercase) that may change
    /// state and open `/ws`.
    origins: Vec<String>,
    /// Served over TLS: the own origin is `https://…`, and HSTS is sent.
    tls: bool,
}

/// Why the edge refused a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EdgeRefusal {
    /// No `Host` and no `:authority`.
    NoHost,
    /// A host this server does not answer to (DNS rebinding).
    UnknownHost(String),
    /// A state-changing request or a WebSocket upgrade from another origin.
    ForeignOrigin(String),
    /// A state-changing request whose body is not declared `application/json`.
    NotJson,
}

impl EdgeRefusal {
    pub fn status(&self) -> StatusCode {
        match self {
            EdgeRefusal::NoHost => StatusCode::BAD_REQUEST,
            EdgeRefusal::UnknownHost(_) => StatusCode::MISDIRECTED_REQUEST,
            EdgeRefusal::ForeignOrigin(_) => StatusCode::FORBIDDEN,
            EdgeRefusal::NotJson => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        }
    }

    /// The §19 document: `AUTH_FORBIDDEN` for another origin, `PROTOCOL_VIOLATION` for the rest.
    pub fn wire(&self) -> WireError {
        let (code, message) = match self {
            EdgeRefusal::NoHost => (
                ErrorCode::ProtocolViolation,
                "the request names no host".to_owned(),
            ),
            EdgeRefusal::UnknownHost(h) => (
                ErrorCode::ProtocolViolation,
                format!(
                    "this server does not answer to the host {h:?} (a DNS-rebinding defence; \
                     the server's operator may add it with --allowed-host)"
                ),
            ),
            EdgeRefusal::ForeignOrigin(o) => (
                ErrorCode::AuthForbidden,
                format!(
                    "requests from the origin {o:?} may not change state here or open /ws \
                     (the server's operator may add it with --allowed-origin)"
                ),
            ),
            EdgeRefusal::NotJson => (
                ErrorCode::ProtocolViolation,
                "a request that changes state must have Content-Type: application/json".to_owned(),
            ),
        };
        WireError::new(code, message).with_status(self.status())
    }
}

/// `host[:port]` → the host, lowercase, without IPv6 brackets.
fn host_name(authority: &str) -> String {
    let a = authority.trim().to_ascii_lowercase();
    if let Some(rest) = a.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default().to_owned();
    }
    match a.rsplit_once(':') {
        // One colon: `host:port`; more: a bare IPv6 address.
        Some((h, _)) if !h.contains(':') => h.to_owned(),
        _ => a,
    }
}

/// True for `localhost` and its subdomains (RFC 6761 §6.3), and the loopback addresses
/// (`127.0.0.0/8`, `::1`); a DNS name that merely starts with `127.` is not one.
pub fn is_loopback_name(host: &str) -> bool {
    LOOPBACK_HOSTS.contains(&host)
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback())
}

impl EdgePolicy {
    /// The policy for a listener on `listen_host` (as given to `--addr`, without port).
    pub fn new(
        listen_host: &str,
        allowed_hosts: &[String],
        allowed_origins: &[String],
        tls: bool,
    ) -> EdgePolicy {
        let listen = host_name(listen_host);
        let wildcard = matches!(listen.as_str(), "0.0.0.0" | "::" | "");
        let hosts = if wildcard && allowed_hosts.is_empty() {
            None
        } else {
            let mut h: Vec<String> = LOOPBACK_HOSTS.iter().map(|s| (*s).to_owned()).collect();
            if !wildcard {
                h.push(listen);
            }
            h.extend(allowed_hosts.iter().map(|a| host_name(a)));
            h.sort();
            h.dedup();
            Some(h)
        };
        EdgePolicy {
            hosts,
            origins: allowed_origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
            tls,
        }
    }

    /// Whether any host name is answered to (a wildcard listener without `--allowed-host`).
    pub fn any_host(&self) -> bool {
        self.hosts.is_none()
    }

    /// The request's authority: `:authority` (HTTP/2) or `Host`.
    fn authority<'a>(uri: &'a Uri, headers: &'a HeaderMap) -> Option<&'a str> {
        uri.authority()
            .map(|a| a.as_str())
            .or_else(|| headers.get(header::HOST).and_then(|h| h.to_str().ok()))
            .filter(|a| !a.is_empty())
    }

    /// Checks one request's head; `Ok(())` lets it through.
    pub fn check(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<(), EdgeRefusal> {
        let authority = Self::authority(uri, headers).ok_or(EdgeRefusal::NoHost)?;
        let host = host_name(authority);
        if let Some(hosts) = &self.hosts
            && !hosts.contains(&host)
        {
            return Err(EdgeRefusal::UnknownHost(host));
        }
        let changes_state = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        let upgrade = headers
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
        if !(changes_state || upgrade) {
            return Ok(());
        }
        let cross_site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("cross-site"));
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("(not text)").to_ascii_lowercase();
            let own = format!(
                "{}://{}",
                if self.tls { "https" } else { "http" },
                authority.to_ascii_lowercase()
            );
            if origin != own && !self.origins.contains(&origin) {
                return Err(EdgeRefusal::ForeignOrigin(origin));
            }
        } else if cross_site {
            return Err(EdgeRefusal::ForeignOrigin("(cross-site)".to_owned()));
        }
        if changes_state {
            let json = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(';').next())
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
            if !json {
                return Err(EdgeRefusal::NotJson);
            }
        }
        Ok(())
    }

    /// Whether a response to a request for `host` gets HSTS.
    fn hsts_for(&self, uri: &Uri, headers: &HeaderMap) -> bool {
        self.tls && Self::authority(uri, headers).is_some_and(|a| !is_loopback_name(&host_name(a)))
    }
}

/// The middleware: refuses what [`EdgePolicy::check`] refuses, adds HSTS over TLS.
pub async fn edge(State(policy): State<Arc<EdgePolicy>>, req: Request, next: Next) -> Response {
    if let Err(refusal) = policy.check(req.method(), req.uri(), req.headers()) {
        tracing::warn!(
            method = %req.method(),
            path = %req.uri().path(),
            refusal = ?refusal,
            "refused at the edge"
        );
        return refusal.wire().into_response();
    }
    let hsts = policy.hsts_for(req.uri(), req.headers());
    let mut r = next.run(req).await;
    if hsts {
        r.headers_mut().insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS),
        );
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                HeaderValue::from_str(v).expect("value"),
            );
        }
        h
    }

    fn uri(s: &str) -> Uri {
        s.parse().expect("uri")
    }

    fn loopback() -> EdgePolicy {
        EdgePolicy::new("127.0.0.1", &[], &[], false)
    }

    const JSON: (&str, &str) = ("content-type", "application/json");

    /// DNS rebinding: a page of `evil.example` resolved to 127.0.0.1 sends `Host:
    /// evil.example:8080`. It gets 421; the loopback names get through, any port.
    #[test]
    fn a_rebound_host_is_misdirected() {
        let p = loopback();
        let get = |host: &str| {
            p.check(
                &Method::GET,
                &uri("/api/registry"),
                &head(&[("host", host)]),
            )
        };
        assert_eq!(
            get("evil.example:8080"),
            Err(EdgeRefusal::UnknownHost("evil.example".into()))
        );
        assert_eq!(
            get("evil.example:8080").map_err(|e| e.status()),
            Err(StatusCode::MISDIRECTED_REQUEST)
        );
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "[::1]:8080",
            "LOCALHOST",
        ] {
            assert_eq!(get(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            p.check(&Method::GET, &uri("/"), &HeaderMap::new()),
            Err(EdgeRefusal::NoHost)
        );
        // HTTP/2's :authority counts as the host.
        assert_eq!(
            p.check(
                &Method::GET,
                &uri("https://evil.example/"),
                &HeaderMap::new()
            ),
            Err(EdgeRefusal::UnknownHost("evil.example".into()))
        );
        // A deployment names its hosts; a wildcard listener without names answers to any.
        let named = EdgePolicy::new("0.0.0.0", &["console.example.org".into()], &[], true);
        let h = |host: &str| named.check(&Method::GET, &uri("/"), &head(&[("host", host)]));
        assert_eq!(h("console.example.org"), Ok(()));
        assert!(h("other.example").is_err());
        let any = EdgePolicy::new("0.0.0.0", &[], &[], true);
        assert!(any.any_host());
        assert_eq!(
            any.check(&Method::GET, &uri("/"), &head(&[("host", "whatever")])),
            Ok(())
        );
    }

    /// The host a request names, and which names are loopback ones (no HSTS for them): a bare
    /// IPv6 address keeps its colons, `127.evil.example` is a DNS name, not a loopback address.
    #[test]
    fn host_names_and_loopback_names() {
        assert_eq!(host_name("Console.Example.ORG:443"), "console.example.org");
        assert_eq!(host_name("console.example.org"), "console.example.org");
        assert_eq!(host_name("[::1]:8080"), "::1");
        assert_eq!(host_name("::1"), "::1");
        assert_eq!(host_name("fe80::1"), "fe80::1");
        for name in [
            "localhost",
            "app.localhost",
            "127.0.0.1",
            "127.0.0.2",
            "::1",
        ] {
            assert!(is_loopback_name(name), "{name}");
        }
        for name in [
            "example.org",
            "127.evil.example",
            "localhost.evil.example",
            "10.0.0.1",
        ] {
            assert!(!is_loopback_name(name), "{name}");
        }
        let tls = EdgePolicy::new("0.0.0.0", &["console.example.org".into()], &[], true);
        assert!(!tls.any_host(), "named hosts are not any host");
        let hsts = |host: &str| tls.hsts_for(&uri("/"), &head(&[("host", host)]));
        assert!(hsts("console.example.org"));
        assert!(hsts("127.evil.example:8443"));
        assert!(!hsts("127.0.0.2:8443"));
        assert!(!hsts("app.localhost"));
        let plain = EdgePolicy::new("0.0.0.0", &["console.example.org".into()], &[], false);
        assert!(!plain.hsts_for(&uri("/"), &head(&[("host", "console.example.org")])));
    }

    /// The middleware itself, in front of a route: a refused request never reaches the handler
    /// and gets the wire error's status; an accepted one reaches it, and over TLS carries HSTS.
    #[tokio::test]
    async fn the_edge_middleware_refuses_before_the_handler_and_adds_hsts() {
        use tower::ServiceExt;
        let reached = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = Arc::clone(&reached);
        let policy = Arc::new(EdgePolicy::new(
            "0.0.0.0",
            &["console.example.org".into()],
            &[],
            true,
        ));
        let app = axum::Router::new()
            .route(
                "/",
                axum::routing::get(move || {
                    let seen = Arc::clone(&seen);
                    async move {
                        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        "ok"
                    }
                }),
            )
            .layer(axum::middleware::from_fn_with_state(policy, edge));
        let get = |host: &str| {
            axum::http::Request::builder()
                .uri("/")
                .header("host", host)
                .body(axum::body::Body::empty())
                .expect("request")
        };
        let refused = app
            .clone()
            .oneshot(get("evil.example"))
            .await
            .expect("answer");
        assert_eq!(refused.status(), StatusCode::MISDIRECTED_REQUEST);
        assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 0);
        let ok = app
            .oneshot(get("console.example.org"))
            .await
            .expect("answer");
        assert_eq!(ok.status(), StatusCode::OK);
        assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(
            ok.headers()
                .get(header::STRICT_TRANSPORT_SECURITY)
                .map(|v| v.as_bytes()),
            Some(HSTS.as_bytes())
        );
    }

    /// A cross-site page posting to the development enrolment, the classic CSRF: refused
    /// whatever its Content-Type; the console's own page gets through.
    #[test]
    fn a_foreign_origin_cannot_change_state_or_open_the_socket() {
        let p = loopback();
        let host = ("host", "127.0.0.1:8080");
        let post = |extra: &[(&str, &str)]| {
            let mut pairs = vec![host];
            pairs.extend_from_slice(extra);
            p.check(&Method::POST, &uri("/api/enrol"), &head(&pairs))
        };
        assert_eq!(
            post(&[
                ("origin", "https://evil.example"),
                ("content-type", "text/plain")
            ]),
            Err(EdgeRefusal::ForeignOrigin("https://evil.example".into()))
        );
        assert_eq!(
            post(&[("origin", "https://evil.example"), JSON]),
            Err(EdgeRefusal::ForeignOrigin("https://evil.example".into()))
        );
        assert!(
            post(&[("origin", "null"), JSON]).is_err(),
            "an opaque origin"
        );
        // Same host, other scheme or port: another origin.
        assert!(post(&[("origin", "https://127.0.0.1:8080"), JSON]).is_err());
        assert!(post(&[("origin", "http://127.0.0.1:9999"), JSON]).is_err());
        assert_eq!(post(&[("origin", "http://127.0.0.1:8080"), JSON]), Ok(()));
        // No Origin: a non-browser client, unless the browser says cross-site.
        assert_eq!(post(&[JSON]), Ok(()));
        assert!(post(&[("sec-fetch-site", "cross-site"), JSON]).is_err());
        assert_eq!(post(&[("sec-fetch-site", "same-origin"), JSON]), Ok(()));
        // The WebSocket upgrade is a GET, but a foreign page's socket signs as its human.
        let ws = |origin: &str| {
            p.check(
                &Method::GET,
                &uri("/ws?principal=human"),
                &head(&[host, ("upgrade", "websocket"), ("origin", origin)]),
            )
        };
        assert_eq!(
            ws("https://evil.example").map_err(|e| e.status()),
            Err(StatusCode::FORBIDDEN)
        );
        assert_eq!(ws("http://127.0.0.1:8080"), Ok(()));
        // A plain GET from another origin is not refused here (CORS keeps its answer unread).
        assert_eq!(
            p.check(
                &Method::GET,
                &uri("/api/registry"),
                &head(&[host, ("origin", "https://evil.example")])
            ),
            Ok(())
        );
        // Over TLS the own origin is https; an allowed origin (a reverse proxy's) gets through.
        let behind = EdgePolicy::new(
            "127.0.0.1",
            &["console.example.org".into()],
            &["https://console.example.org/".into()],
            false,
        );
        let h = head(&[
            ("host", "console.example.org"),
            ("origin", "https://console.example.org"),
            JSON,
        ]);
        assert_eq!(
            behind.check(&Method::POST, &uri("/api/commands"), &h),
            Ok(())
        );
        let tls = EdgePolicy::new("127.0.0.1", &[], &[], true);
        let h = head(&[host, ("origin", "https://127.0.0.1:8080"), JSON]);
        assert_eq!(tls.check(&Method::POST, &uri("/api/commands"), &h), Ok(()));
    }

    #[test]
    fn a_state_change_must_declare_json() {
        let p = loopback();
        let post = |ct: Option<&str>| {
            let mut pairs = vec![("host", "127.0.0.1:8080")];
            if let Some(ct) = ct {
                pairs.push(("content-type", ct));
            }
            p.check(&Method::POST, &uri("/api/commands"), &head(&pairs))
        };
        for bad in [
            None,
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/jsonx"),
        ] {
            assert_eq!(post(bad), Err(EdgeRefusal::NotJson), "{bad:?}");
        }
        assert_eq!(post(Some("application/json")), Ok(()));
        assert_eq!(post(Some("Application/JSON; charset=utf-8")), Ok(()));
        assert_eq!(
            post(None).map_err(|e| e.status()),
            Err(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        );
        // PUT is a state change too (the development clock).
        assert!(
            p.check(
                &Method::PUT,
                &uri("/api/dev/clock"),
                &head(&[("host", "localhost:1")])
            )
            .is_err()
        );
    }

    #[test]
    fn hsts_is_sent_over_tls_except_to_localhost_names() {
        let tls = EdgePolicy::new("0.0.0.0", &[], &[], true);
        let plain = EdgePolicy::new("0.0.0.0", &[], &[], false);
        let h = |host: &str| head(&[("host", host)]);
        assert!(tls.hsts_for(&uri("/"), &h("console.example.org")));
        assert!(!tls.hsts_for(&uri("/"), &h("localhost:8443")));
        assert!(!tls.hsts_for(&uri("/"), &h("127.0.0.1:8443")));
        assert!(!plain.hsts_for(&uri("/"), &h("console.example.org")));
    }
}

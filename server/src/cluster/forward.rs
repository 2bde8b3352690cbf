//! Commands that reach a node that is not the writer (docs/cluster.md, "Forwarding"): the
//! node sends the signed bytes unchanged to the writer's `POST /api/commands` over one HTTP/2
//! connection (many Commands in flight on it), and passes the answer back to the connection
//! that sent the Command. The writer verifies the signature as for any client: forwarding
//! adds no authority.

use crate::runtime::{Origin, Reply, Request};
use crate::wire::WireError;
use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use wasm_core::json::{self, Value};
use wasm_core::model::error::ErrorCode;

/// Where this node sends the Commands it receives.
#[derive(Clone)]
pub enum Route {
    /// No writer known (an election is under way): refused, retryable.
    Nobody,
    /// This node is the writer: its own owner thread's queue.
    Local(std::sync::mpsc::SyncSender<Request>),
    /// Another node: its advertised URL (`http://HOST:PORT`).
    Remote(String),
}

/// The header a forwarding node sends for a connection's Command, and its value: the writer
/// answers an acceptance with the Events' canonical bytes in lines (`runtime::reply_lines`).
pub const ANSWER_HEADER: &str = "x-mwp-answer";
pub const ANSWER_LINES: &str = "lines";

/// Forwarded Commands waiting for the writer's answer, at most (a client can fill the queue;
/// past it, `BACKPRESSURE`).
pub const MAX_FORWARDED: usize = 1024;

/// How long a forwarded Command may wait for the writer before the sender is told to retry,
/// at least (a writer that stopped answering has lost its lease after about that long).
const MIN_FORWARD_TIMEOUT: Duration = Duration::from_secs(1);

/// Hands each Command to the writer, wherever it is.
pub struct Router {
    pub route: RwLock<Route>,
    connection: tokio::sync::Mutex<Option<(String, SendRequest<Full<Bytes>>)>>,
    in_flight: Arc<tokio::sync::Semaphore>,
    /// Delivers a forwarded Command's own Events to the connection that sent it.
    pub own: Mutex<Option<Arc<crate::gateway::hub::Hub>>>,
    rt: tokio::runtime::Handle,
    /// How long a forwarded Command waits for the writer's answer (the lease's length).
    timeout: Duration,
    /// For an `https://` writer: the certificate the nodes share, pinned (`Router::pin`).
    tls: RwLock<Option<Arc<rustls::ClientConfig>>>,
    /// What `GET /readyz` says of this node, kept by [`Router::set`] and [`Router::renewed`].
    pub ready: Arc<ClusterReady>,
}

/// A node's readiness (`GET /readyz`): the writer holds its lease; a follower has folded the
/// log and seen a writer's lease current. Reported by the node's thread each time it learns
/// it (the writer on each renewal, every lease/3; a follower on each look at the lease, every
/// lease/4): a report older than the lease is stale, and not ready.
pub struct ClusterReady {
    last: Mutex<Option<(Result<(), String>, std::time::Instant)>>,
    lease: Duration,
}

impl ClusterReady {
    fn report(&self, r: Result<(), String>) {
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((r, std::time::Instant::now()));
    }

    pub fn state(&self) -> Result<(), String> {
        let last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        match last {
            None => Err("joining the cluster".into()),
            Some((_, at)) if at.elapsed() > self.lease => {
                Err("no word of the lease for longer than the lease".into())
            }
            Some((r, _)) => r,
        }
    }
}

fn retry_later(message: &str) -> Reply {
    Reply::Refused(
        WireError::new(ErrorCode::Backpressure, message)
            .retry_after(crate::runtime::RETRY_AFTER_MS),
    )
}

impl Router {
    pub fn new(rt: tokio::runtime::Handle, lease: Duration) -> Arc<Router> {
        Arc::new(Router {
            route: RwLock::new(Route::Nobody),
            connection: tokio::sync::Mutex::new(None),
            in_flight: Arc::new(tokio::sync::Semaphore::new(MAX_FORWARDED)),
            own: Mutex::new(None),
            rt,
            timeout: lease.max(MIN_FORWARD_TIMEOUT),
            tls: RwLock::new(None),
            ready: Arc::new(ClusterReady {
                last: Mutex::new(None),
                lease,
            }),
        })
    }

    /// The writer renewed its lease.
    pub fn renewed(&self) {
        self.ready.report(Ok(()));
    }

    /// Trusts exactly `leaf` for `https://` writers: the certificate this node serves, which
    /// the nodes share (the data directory's development certificate, or the same
    /// `--tls-cert`), spoken with ALPN `h2`.
    pub fn pin(&self, leaf: rustls::pki_types::CertificateDer<'static>) -> Result<(), String> {
        let pinned = crate::gateway::client::tls_pinned(leaf)?;
        let mut config = (*pinned).clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        *self
            .tls
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(config));
        Ok(())
    }

    /// Where Commands go now; set by the node's thread once it knows (the writer after it
    /// caught up with the log, a follower after a fold and a look at the lease).
    pub fn set(&self, route: Route) {
        self.ready.report(match &route {
            Route::Nobody => Err("no writer holds the lease".into()),
            Route::Local(_) | Route::Remote(_) => Ok(()),
        });
        *self
            .route
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = route;
    }

    fn current(&self) -> Route {
        self.route
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Routes one Command, on the caller's thread (a connection's task, an HTTP handler):
    /// into the writer's own queue, or onto a task that forwards it. No thread of its own
    /// between a Command and the writer, so a Command costs no wake-up here.
    fn route(self: &Arc<Self>, (bytes, to): Request) {
        match self.current() {
            Route::Local(tx) => match tx.try_send((bytes, to)) {
                Ok(()) => {}
                Err(std::sync::mpsc::TrySendError::Full((_, to))) => {
                    to.send(retry_later(
                        "the authority's queue is full; retry after retryAfterMs",
                    ));
                }
                Err(std::sync::mpsc::TrySendError::Disconnected((_, to))) => {
                    to.send(retry_later("this node just stopped writing; retry"));
                }
            },
            Route::Nobody => {
                to.send(retry_later(
                    "no node holds the writer's lease at the moment (an election is under \
                     way); retry after retryAfterMs",
                ));
            }
            Route::Remote(address) => {
                let Ok(permit) = Arc::clone(&self.in_flight).try_acquire_owned() else {
                    to.send(retry_later(
                        "too many Commands on their way to the writer; retry",
                    ));
                    return;
                };
                let me = Arc::clone(self);
                self.rt.spawn(async move {
                    let origin = to.origin;
                    let answer = tokio::time::timeout(
                        me.timeout,
                        me.forward(&address, bytes, origin.is_some()),
                    )
                    .await;
                    drop(permit);
                    let reply = match answer {
                        Ok(Ok((status, body))) => me.reply(status, &body, origin),
                        Ok(Err(e)) => {
                            tracing::warn!(writer = %address, cause = %e, "a forwarded Command did not reach the writer");
                            me.forget(&address).await;
                            retry_later("the writer could not be reached; retry")
                        }
                        Err(_) => {
                            me.forget(&address).await;
                            retry_later("the writer did not answer in time; retry")
                        }
                    };
                    to.send(reply);
                });
            }
        }
    }

    /// The writer's answer as this node gives it: the body unchanged for HTTP; for a
    /// connection, its own Events as `EVENT` frames (where it is not subscribed) and an
    /// empty `Done`, as the writer's own gateway does.
    fn reply(&self, status: u16, body: &[u8], origin: Origin) -> Reply {
        if status != 200 {
            return match json::parse(body)
                .ok()
                .and_then(|d| WireError::from_document(status, &d))
            {
                Some(e) => Reply::Refused(e),
                None => retry_later("the writer's answer could not be read; retry"),
            };
        }
        let Some(origin) = origin else {
            return Reply::Done(String::from_utf8_lossy(body).into_owned());
        };
        // `accepted` or `duplicate`, then one Event's canonical bytes per line.
        let mut lines = body.split(|b| *b == b'\n');
        let duplicate = lines.next() == Some(b"duplicate".as_slice());
        let own: Vec<crate::gateway::hub::OwnEvent> = lines
            .filter_map(|jcs| {
                let e = json::parse(jcs).ok()?;
                let group = e.pointer("/groupId").and_then(Value::as_str)?;
                let sequence = match e.pointer("/sequence")? {
                    Value::Number(n) => n.as_safe_u64()?,
                    _ => return None,
                };
                Some(crate::gateway::hub::OwnEvent {
                    group: group.to_owned(),
                    sequence,
                    jcs: jcs.to_vec(),
                })
            })
            .collect();
        let hub = self
            .own
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(hub) = hub {
            hub.deliver_own(origin, &own, duplicate);
        }
        Reply::Done(String::new())
    }

    async fn forget(&self, address: &str) {
        let mut c = self.connection.lock().await;
        if c.as_ref().is_some_and(|(a, _)| a == address) {
            *c = None;
        }
    }

    /// One Command to the writer at `address` over the shared HTTP/2 connection (opened
    /// on first use and again after a failure).
    async fn forward(
        &self,
        address: &str,
        body: Vec<u8>,
        lines: bool,
    ) -> Result<(u16, Vec<u8>), String> {
        let mut sender = {
            let mut c = self.connection.lock().await;
            match c.as_ref() {
                Some((a, s)) if a == address && !s.is_closed() => s.clone(),
                _ => {
                    let tls = self
                        .tls
                        .read()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .clone();
                    let s = connect(address, tls).await?;
                    *c = Some((address.to_owned(), s.clone()));
                    s
                }
            }
        };
        sender.ready().await.map_err(|e| e.to_string())?;
        let uri = format!("{}/api/commands", address.trim_end_matches('/'));
        let mut request =
            hyper::Request::post(uri).header(hyper::header::CONTENT_TYPE, "application/json");
        if lines {
            request = request.header(ANSWER_HEADER, ANSWER_LINES);
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((status, body.to_vec()))
    }
}

/// The node's intake: every handle of the node hands its Commands to the router.
pub struct Intake(pub Arc<Router>);

impl crate::runtime::Dispatch for Intake {
    fn dispatch(&self, request: Request) {
        self.0.route(request);
    }
}

/// An HTTP/2 connection to `address`: `http://HOST:PORT` (prior knowledge, for a private
/// network) or `https://HOST:PORT` (TLS 1.3 with the pinned certificate, ALPN `h2`).
async fn connect(
    address: &str,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<SendRequest<Full<Bytes>>, String> {
    let (secure, rest) = match (
        address.strip_prefix("https://"),
        address.strip_prefix("http://"),
    ) {
        (Some(r), _) => (true, r),
        (None, Some(r)) => (false, r),
        _ => {
            return Err(format!(
                "{address}: a cluster node's address is http(s)://HOST:PORT"
            ));
        }
    };
    let hostport = rest.trim_end_matches('/');
    let tcp = tokio::net::TcpStream::connect(hostport)
        .await
        .map_err(|e| format!("cannot connect to {hostport}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let exec = hyper_util::rt::TokioExecutor::new();
    let (sender, conn): (SendRequest<Full<Bytes>>, _) = if secure {
        let config = tls.ok_or_else(|| format!("{address}: no certificate to trust for https"))?;
        let host = hostport
            .rsplit_once(':')
            .map_or(hostport, |(h, _)| h)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let name = rustls::pki_types::ServerName::try_from(host.to_owned())
            .map_err(|e| format!("{host}: {e}"))?;
        let stream = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS with {hostport}: {e}"))?;
        let (sender, conn) =
            hyper::client::conn::http2::handshake(exec, hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| format!("HTTP/2 with {hostport}: {e}"))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(cause = %e, "the connection to the writer ended");
            }
        });
        return Ok(sender);
    } else {
        hyper::client::conn::http2::handshake(exec, hyper_util::rt::TokioIo::new(tcp))
            .await
            .map_err(|e| format!("HTTP/2 with {hostport}: {e}"))?
    };
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(cause = %e, "the connection to the writer ended");
        }
    });
    Ok(sender)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `GET /readyz` on a node: not ready until the node's thread reported, ready while a
    /// writer is known, not ready without one, and not ready once the report is older than
    /// the lease (a node thread that stopped reporting).
    #[test]
    fn readiness_follows_the_route_and_goes_stale_after_the_lease() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let lease = Duration::from_millis(200);
        let r = Router::new(rt.handle().clone(), lease);
        assert_eq!(r.ready.state(), Err("joining the cluster".to_owned()));
        r.set(Route::Remote("http://127.0.0.1:1".into()));
        assert_eq!(r.ready.state(), Ok(()));
        r.set(Route::Nobody);
        assert_eq!(r.ready.state(), Err("no writer holds the lease".to_owned()));
        let (tx, _rx) = std::sync::mpsc::sync_channel(1);
        r.set(Route::Local(tx));
        assert_eq!(r.ready.state(), Ok(()));
        std::thread::sleep(lease + Duration::from_millis(50));
        assert!(r.ready.state().is_err(), "a report older than the lease");
        r.renewed();
        assert_eq!(r.ready.state(), Ok(()));
    }

    /// A handle over a node's intake, as `node::start` makes it.
    fn handle(router: &Arc<Router>) -> crate::runtime::AuthorityHandle {
        let evidence = wasm_core::crypto::registry::RegistryEvidence {
            organization_id: "urn:missionweaveprotocol:organization:router-test".into(),
            bindings: vec![],
        };
        let registry = crate::live_registry::LiveRegistry::new(
            evidence
                .clone()
                .validate()
                .expect("an empty Registry is valid"),
        );
        crate::runtime::AuthorityHandle::over(
            Arc::new(Intake(Arc::clone(router))),
            Arc::new(crate::registry_api::PublicRegistry::new(&evidence, &[])),
            registry,
        )
    }

    fn retryable(reply: &Reply) -> bool {
        matches!(reply, Reply::Refused(e)
            if e.code == ErrorCode::Backpressure && e.retry_after_ms.is_some())
    }

    /// The router has no thread: a Command is in the writer's queue when `submit_then`
    /// returns, on the caller's thread; a full queue (a client filling it) and a writer that
    /// stopped are answered at once with a retryable refusal, and so is a Command that finds
    /// no writer. Nothing waits and nothing is dropped unanswered.
    #[test]
    fn the_router_hands_each_command_on_from_the_callers_thread() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let router = Router::new(rt.handle().clone(), Duration::from_millis(200));
        let h = handle(&router);
        let answers = Arc::new(Mutex::new(Vec::new()));
        let submit = |bytes: &[u8]| {
            let answers = Arc::clone(&answers);
            h.submit_then(bytes.to_vec(), Some(7), move |r| {
                answers.lock().expect("answers").push(r);
            });
        };
        // The last answer given, if it is a retryable refusal.
        let refused = || {
            answers
                .lock()
                .expect("answers")
                .pop()
                .is_some_and(|r| retryable(&r))
        };

        // No writer: refused at once, retryable.
        submit(b"first");
        assert!(refused(), "no writer");

        // The writer is this node: in its queue on return, no thread in between.
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        router.set(Route::Local(tx));
        submit(b"second");
        let (bytes, to) = rx.try_recv().expect("queued on the caller's thread");
        assert_eq!(bytes, b"second");
        assert_eq!(to.origin, Some(7));
        assert!(answers.lock().expect("answers").is_empty());

        // A full queue: the next Command is refused at once, the one queued kept.
        submit(b"third");
        submit(b"fourth");
        assert!(refused(), "the fourth is refused");
        let (third, _waiting) = rx.try_recv().expect("the third is queued");
        assert_eq!(third, b"third");

        // The writer stopped (its queue gone): refused at once, retryable.
        drop(rx);
        submit(b"fifth");
        assert!(refused(), "the writer stopped");
        assert!(answers.lock().expect("answers").is_empty());
    }
}

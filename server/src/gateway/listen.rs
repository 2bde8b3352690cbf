//! The accept loop of `serve`, plain and TLS alike, bounded under abuse (issue 26, "bounded
//! under abuse"): a global cap and a per-client-address cap on open connections, checked at
//! accept time (a connection over a cap is closed at once, never queued, and counted in a log
//! line); a deadline for the first request (the TLS handshake, HTTP/2's preface and the first
//! request head included), so a slowloris that trickles bytes is cut; hyper's HTTP/1 header
//! read timeout for every later request head (an idle keep-alive connection waits for one,
//! so it is cut too); and an idle timeout (no byte either way) for any connection still
//! speaking HTTP. A connection upgraded to `/ws` keeps its slot under the caps until its socket
//! closes, and from then on is bounded by the binding itself (`hello_wait`, the session's
//! `expiresAt`, `close_grace`).

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Open connections at most, by default: a 2-core server's file descriptors and memory stay
/// far from their limits (a socket costs a few KiB until it says HELLO).
pub const MAX_CONNECTIONS: usize = 4096;
/// Open connections from one client address at most, by default: a browser opens about 8, an
/// Agent 1 or 2; one address cannot take the whole global cap.
pub const MAX_CONNECTIONS_PER_ADDRESS: usize = 64;
/// How long a request head may take (and, for a new connection, the TLS handshake and the
/// first request with it): a slowloris sending its header byte by byte is cut.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection still speaking HTTP may stay without a byte either way.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a graceful stop waits for connections still speaking HTTP.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The listener's bounds (`serve --max-connections …`).
#[derive(Clone, Debug)]
pub struct ListenLimits {
    pub max_connections: usize,
    pub max_per_address: usize,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Default for ListenLimits {
    fn default() -> Self {
        ListenLimits {
            max_connections: MAX_CONNECTIONS,
            max_per_address: MAX_CONNECTIONS_PER_ADDRESS,
            header_read_timeout: HEADER_READ_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
        }
    }
}

impl ListenLimits {
    /// From `serve`'s flags (counts, and timeouts in seconds).
    pub fn from_flags(max: u64, per_address: u64, header_s: u64, idle_s: u64) -> ListenLimits {
        ListenLimits {
            max_connections: usize::try_from(max).unwrap_or(usize::MAX),
            max_per_address: usize::try_from(per_address).unwrap_or(usize::MAX),
            header_read_timeout: Duration::from_secs(header_s),
            idle_timeout: Duration::from_secs(idle_s),
        }
    }
}

#[derive(Default)]
struct Counts {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// The open connections, counted globally and per client address.
pub struct ConnectionGate {
    limits: ListenLimits,
    counts: Mutex<Counts>,
    /// Connections refused over a cap since the last log line.
    refused: AtomicU64,
    /// Connections cut for a slow first request (TLS handshake or head) or for idling (in the
    /// refusals' log line).
    cut: AtomicU64,
}

/// One admitted connection's place under the caps, given back when dropped (with the socket,
/// which may outlive the HTTP connection as a WebSocket).
pub struct Slot {
    gate: Arc<ConnectionGate>,
    address: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.gate.lock();
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.by_address.get_mut(&self.address) {
            *n -= 1;
            if *n == 0 {
                c.by_address.remove(&self.address);
            }
        }
    }
}

impl ConnectionGate {
    pub fn new(limits: ListenLimits) -> Arc<ConnectionGate> {
        Arc::new(ConnectionGate {
            limits,
            counts: Mutex::default(),
            refused: AtomicU64::new(0),
            cut: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A place for a new connection from `address`, or `None` over a cap.
    pub fn admit(self: &Arc<Self>, address: IpAddr) -> Option<Slot> {
        let mut c = self.lock();
        let mine = c.by_address.get(&address).copied().unwrap_or(0);
        if c.total >= self.limits.max_connections || mine >= self.limits.max_per_address {
            drop(c);
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        c.total += 1;
        *c.by_address.entry(address).or_insert(0) += 1;
        Some(Slot {
            gate: Arc::clone(self),
            address,
        })
    }

    /// Connections refused over a cap so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// A socket holding its [`Slot`], counting the bytes moved (the idle timeout's clock).
struct Guarded<S> {
    inner: S,
    activity: Arc<AtomicU64>,
    _slot: Slot,
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            self.activity.fetch_add(n as u64, Ordering::Relaxed);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &r {
            self.activity.fetch_add(*n as u64, Ordering::Relaxed);
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = &r {
            self.activity.fetch_add(*n as u64, Ordering::Relaxed);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Serves `app` on `listener` (plain, or TLS 1.3 with `tls`) within `limits` until
/// `shutdown` resolves; then stops accepting, asks every connection still speaking HTTP to
/// finish, and waits for them at most [`SHUTDOWN_GRACE`].
pub async fn serve(
    listener: std::net::TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: ListenLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("listener: {e}"))?;
    let listener =
        tokio::net::TcpListener::from_std(listener).map_err(|e| format!("listener: {e}"))?;
    let gate = ConnectionGate::new(limits.clone());
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // Each connection task holds a clone; `recv` returns `None` once all are gone.
    let (alive_tx, mut alive_rx) = tokio::sync::mpsc::channel::<()>(1);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut last_log = Instant::now();
    let mut logged = 0u64;
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(slot) = gate.admit(peer.ip()) else {
            // Closed at once: never queued, never read. One log line a second at most says
            // how many, so a flood cannot flood the log too.
            drop(tcp);
            if last_log.elapsed() >= Duration::from_secs(1) {
                let total = gate.refused();
                tracing::warn!(
                    refused = total - logged,
                    refused_total = total,
                    cut_total = gate.cut.load(Ordering::Relaxed),
                    max_connections = limits.max_connections,
                    max_per_address = limits.max_per_address,
                    "connections refused over the connection caps"
                );
                logged = total;
                last_log = Instant::now();
            }
            continue;
        };
        // Frames are small and latency matters (§17): no Nagle delay on accepted sockets.
        let _ = tcp.set_nodelay(true);
        let conn = Connection {
            app: app.clone(),
            peer,
            limits: limits.clone(),
            gate: Arc::clone(&gate),
            stop: stop_rx.clone(),
        };
        let acceptor = acceptor.clone();
        let alive = alive_tx.clone();
        tokio::spawn(async move {
            conn.run(tcp, slot, acceptor).await;
            drop(alive);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(alive_tx);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, alive_rx.recv()).await;
    Ok(())
}

/// One accepted connection.
struct Connection {
    app: Router,
    peer: SocketAddr,
    limits: ListenLimits,
    gate: Arc<ConnectionGate>,
    stop: tokio::sync::watch::Receiver<bool>,
}

impl Connection {
    async fn run(
        self,
        tcp: tokio::net::TcpStream,
        slot: Slot,
        acceptor: Option<tokio_rustls::TlsAcceptor>,
    ) {
        // The first request must arrive by this deadline, the TLS handshake included.
        let deadline = tokio::time::Instant::now() + self.limits.header_read_timeout;
        let activity = Arc::new(AtomicU64::new(0));
        match acceptor {
            None => {
                let io = Guarded {
                    inner: tcp,
                    activity: Arc::clone(&activity),
                    _slot: slot,
                };
                self.http(io, activity, deadline).await;
            }
            Some(acceptor) => match tokio::time::timeout_at(deadline, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => {
                    let io = Guarded {
                        inner: tls,
                        activity: Arc::clone(&activity),
                        _slot: slot,
                    };
                    self.http(io, activity, deadline).await;
                }
                Ok(Err(_)) => {}
                Err(_) => {
                    self.gate.cut.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(peer = %self.peer, "TLS handshake not done in time; cut");
                }
            },
        }
    }

    /// Serves HTTP/1.1 (upgrades included) or HTTP/2 on `io` until it closes, upgrades, idles
    /// or misses the first request's deadline.
    async fn http<S>(self, io: Guarded<S>, activity: Arc<AtomicU64>, deadline: tokio::time::Instant)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let requested = Arc::new(AtomicBool::new(false));
        let service = {
            let requested = Arc::clone(&requested);
            let app = self.app.clone();
            let peer = self.peer;
            hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                requested.store(true, Ordering::Relaxed);
                let mut req = req.map(axum::body::Body::new);
                // The client's address, for per-address bounds (`POST /api/commands`).
                req.extensions_mut().insert(ConnectInfo(peer));
                tower::ServiceExt::oneshot(app.clone(), req)
            })
        };
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_read_timeout);
        builder.http2().timer(TokioTimer::new());
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
        let mut conn = std::pin::pin!(conn);
        let mut stop = self.stop;
        let mut stopping = false;
        let first = tokio::time::sleep_until(deadline);
        let mut first = std::pin::pin!(first);
        let mut idle = tokio::time::interval(self.limits.idle_timeout);
        idle.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        idle.tick().await;
        let mut seen = activity.load(Ordering::Relaxed);
        let mut idle_shutdown = false;
        loop {
            tokio::select! {
                // Done, or upgraded (the socket lives on in the WebSocket).
                _ = conn.as_mut() => return,
                changed = stop.changed(), if !stopping => {
                    stopping = true;
                    if changed.is_ok() {
                        conn.as_mut().graceful_shutdown();
                    }
                }
                () = &mut first, if !requested.load(Ordering::Relaxed) => {
                    if !requested.load(Ordering::Relaxed) {
                        self.gate.cut.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(peer = %self.peer, "no request in time; cut");
                        return;
                    }
                }
                _ = idle.tick() => {
                    let now = activity.load(Ordering::Relaxed);
                    if now != seen {
                        seen = now;
                        continue;
                    }
                    if idle_shutdown {
                        // Asked to finish one idle period ago and still here: drop it.
                        self.gate.cut.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    idle_shutdown = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `serve`'s flags default to the bounds named here and in `gateway` (the flags spell
    /// their defaults as literals for `--help`).
    #[test]
    fn serve_flags_default_to_these_bounds() {
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            serve: crate::cli::serve::ServeArgs,
        }
        use clap::Parser;
        let o = Wrap::try_parse_from(["serve"]).expect("defaults").serve;
        let l = ListenLimits::from_flags(
            o.max_connections,
            o.max_connections_per_address,
            o.header_read_timeout,
            o.idle_timeout,
        );
        let d = ListenLimits::default();
        assert_eq!(
            (
                l.max_connections,
                l.max_per_address,
                l.header_read_timeout,
                l.idle_timeout
            ),
            (
                d.max_connections,
                d.max_per_address,
                d.header_read_timeout,
                d.idle_timeout
            )
        );
        assert_eq!(
            usize::try_from(o.sessions_per_principal).ok(),
            Some(crate::gateway::SESSIONS_PER_PRINCIPAL)
        );
        let o = Wrap::try_parse_from(["serve", "--max-connections", "9", "--idle-timeout", "2"])
            .expect("flags")
            .serve;
        assert_eq!(o.max_connections, 9);
        assert_eq!(o.idle_timeout, 2);
        assert!(Wrap::try_parse_from(["serve", "--max-connections", "0"]).is_err());
    }
}

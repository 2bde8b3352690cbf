//! The fields of the request log (docs/operations.md, "Logs"): every line of one HTTP
//! request, and of the WebSocket session it upgrades to, carries the same request id and,
//! once known, the principal. Apart from `http` so that the gateway and enrolment can name
//! the principal without depending on the router.

/// The next request id: unique in this process, in every log line of the request (and of
/// the WebSocket session it upgrades to), so that an operator can follow one request.
pub fn next_request_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Names the principal (an actor's id, never a key or a token) in the current request's log
/// span, once known.
pub fn record_principal(id: &str) {
    tracing::Span::current().record("principal", id);
}

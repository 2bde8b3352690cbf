//! Notices to approvers who are not looking at the console (issue 29, docs/notifications.md):
//! `serve --notify-webhook SPEC` POSTs a signed JSON notice for each new item awaiting a human,
//! the two the Approvals view lists that stop an Agent (wasm-core `views::approvals`):
//! - an **execution gate**: a `queued` WorkItem whose Work Contract requires an Execution
//!   Approval and has none for its owner's Ownership Epoch (§12); its owner waits until its
//!   ownership lease runs out;
//! - a **final approval**: a Mission `awaiting_approval` (§7.3).
//!
//! Detection hangs off the authority's publish path ([`Publish`]): only the Events of a durable
//! batch are looked at (the WorkItems and Missions they touch), on the owner thread, without
//! I/O. Deliveries are a worker task per webhook over a bounded queue (the oldest notice is
//! dropped and counted when it is full), retried with exponential backoff up to a cap, each
//! attempt under a timeout: the authority never waits on a webhook. On a cluster only the
//! writer announces (`cluster::node` starts the notifier when it takes the lease).
//!
//! The body is the notice's JCS (RFC 8785) and is signed as sent with the Organization's
//! service key (Ed25519, the key that seals Events): `X-MWP-Key-Id` names the key as the
//! Registry binds it (`GET /api/registry`), `X-MWP-Signature` is the base64url signature of the
//! body's bytes.

use crate::authority::Outcome;
use crate::runtime::{Origin, Publish};
use crate::store::Store;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use std::collections::{BTreeSet, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use wasm_core::authority::Submitted;
use wasm_core::authority::clock::Micros;
use wasm_core::authority::handlers::work_exec;
use wasm_core::authority::state::State;
use wasm_core::json::{Object, Value};
use wasm_core::model::ToJson;
use wasm_core::model::common::ActorType;
use wasm_core::model::mission::MissionState;
use wasm_core::model::work_item::WorkItemState;

/// Notices waiting per webhook at most; one more drops the oldest (counted).
pub const QUEUE_BOUND: usize = 256;
/// Attempts per notice at most (the first and its retries).
pub const MAX_ATTEMPTS: u32 = 8;
/// The first retry's delay; each next one doubles, up to [`BACKOFF_CAP`].
pub const BACKOFF_BASE: Duration = Duration::from_millis(500);
pub const BACKOFF_CAP: Duration = Duration::from_secs(60);
/// One attempt (connect, TLS, request, answer) at most.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Item keys remembered as announced; past it the oldest are forgotten.
const ANNOUNCED_BOUND: usize = 65_536;
/// The header naming the signing key (its `keyId` in the Registry).
pub const KEY_ID_HEADER: &str = "x-mwp-key-id";
/// The header carrying the base64url Ed25519 signature of the body's exact bytes.
pub const SIGNATURE_HEADER: &str = "x-mwp-signature";
/// The counter of delivery outcomes (`outcome` = delivered | retried | dropped | failed).
pub const DELIVERIES: &str = "mwp_webhook_deliveries_total";

/// What awaits a human.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NoticeKind {
    /// An execution gate (`approval.grant_execution`, §12).
    Gate,
    /// A final Mission approval (`mission.approve`, §7.3).
    Final,
}

impl NoticeKind {
    /// The word in the notice's `kind` and in a webhook's filter.
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Gate => "gate",
            NoticeKind::Final => "final_approval",
        }
    }
}

/// Which notices one webhook gets: kinds (all when empty) and Missions (all when empty).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub kinds: BTreeSet<NoticeKind>,
    pub missions: BTreeSet<String>,
}

impl Filter {
    fn admits(&self, kind: NoticeKind, mission: &str) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(&kind))
            && (self.missions.is_empty() || self.missions.contains(mission))
    }
}

/// One `--notify-webhook`: where, and which notices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Webhook {
    pub url: String,
    pub secure: bool,
    /// `HOST:PORT` to connect to.
    pub authority: String,
    /// The host alone (the TLS server name, the `Host` header's name).
    pub host: String,
    pub path: String,
    pub filter: Filter,
}

/// Parses `[FILTER,…@]URL`: `URL` is `https://HOST[:PORT]/PATH` (or `http://` to a loopback
/// host, or anywhere with `allow_http`); each FILTER is `gate`, `final` or `mission=ID`. Kinds
/// are alternatives, Missions too; a notice must pass both. `gate,mission=urn:m:1@https://…`.
pub fn parse_webhook(spec: &str, allow_http: bool) -> Result<Webhook, String> {
    let at = ["@https://", "@http://"]
        .iter()
        .filter_map(|s| spec.find(s))
        .min();
    let (filters, url) = match at {
        _ if spec.starts_with("https://") || spec.starts_with("http://") => ("", spec),
        Some(i) => (&spec[..i], &spec[i + 1..]),
        None => return Err(format!("{spec}: no http(s):// URL")),
    };
    let mut filter = Filter::default();
    for f in filters.split(',').filter(|f| !f.is_empty()) {
        match f {
            "gate" => {
                filter.kinds.insert(NoticeKind::Gate);
            }
            "final" => {
                filter.kinds.insert(NoticeKind::Final);
            }
            _ => match f.strip_prefix("mission=") {
                Some(id) if !id.is_empty() => {
                    filter.missions.insert(id.to_owned());
                }
                _ => {
                    return Err(format!(
                        "{spec}: filter {f:?} is none of gate, final, mission=ID"
                    ));
                }
            },
        }
    }
    let (secure, rest) = match (url.strip_prefix("https://"), url.strip_prefix("http://")) {
        (Some(r), _) => (true, r),
        (None, Some(r)) => (false, r),
        _ => return Err(format!("{spec}: no http(s):// URL")),
    };
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if hostport.is_empty() || hostport.contains('@') || path.contains('#') {
        return Err(format!(
            "{spec}: the URL is http(s)://HOST[:PORT]/PATH (no user, no fragment)"
        ));
    }
    let default_port = if secure { 443 } else { 80 };
    let (host, port) = match hostport.strip_prefix('[') {
        // `[v6]` or `[v6]:PORT`
        Some(v6) => match v6.split_once(']') {
            Some((h, "")) => (h, None),
            Some((h, p)) => (h, Some(p.strip_prefix(':').unwrap_or(p))),
            None => return Err(format!("{spec}: unclosed [")),
        },
        None => match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        },
    };
    let port = match port {
        None => default_port,
        Some(p) => p
            .parse::<u16>()
            .map_err(|_| format!("{spec}: bad port {p:?}"))?,
    };
    let host = if hostport.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = bare == "localhost"
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !secure && !loopback && !allow_http {
        return Err(format!(
            "{spec}: plain http only to a loopback host (the notice would cross the network \
             in clear); use https:// or --notify-allow-http"
        ));
    }
    Ok(Webhook {
        url: url.to_owned(),
        secure,
        authority: format!("{host}:{port}"),
        host: bare.to_owned(),
        path: path.to_owned(),
        filter,
    })
}

/// One notice: its kind and Mission (for the filters) and its body, the JCS of the document.
#[derive(Debug)]
pub struct Notice {
    pub kind: NoticeKind,
    pub mission_id: String,
    pub body: Bytes,
}

/// The bounded queue of one webhook.
struct Queue {
    items: Mutex<VecDeque<Arc<Notice>>>,
    wake: Notify,
}

impl Queue {
    fn push(&self, n: Arc<Notice>) {
        let mut q = self.items.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() >= QUEUE_BOUND {
            q.pop_front();
            metrics::counter!(DELIVERIES, "outcome" => "dropped").increment(1);
            tracing::warn!("a webhook's queue is full: its oldest notice is dropped");
        }
        q.push_back(n);
        drop(q);
        self.wake.notify_one();
    }

    async fn pop(&self) -> Arc<Notice> {
        loop {
            let next = self
                .items
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front();
            if let Some(n) = next {
                return n;
            }
            self.wake.notified().await;
        }
    }
}

/// What announced items and the webhooks' queues are.
pub struct Notifier {
    queues: Vec<(Filter, Arc<Queue>)>,
    /// The console's base URL for the links (`https://console.example`), without a final `/`:
    /// `--notify-link-base`, or the listen address once bound.
    link_base: std::sync::OnceLock<String>,
    /// Item keys already announced (`gate <WorkItem> <epoch>`, `final <Mission> <revision>`),
    /// oldest first, bounded.
    announced: Mutex<(HashSet<String>, VecDeque<String>)>,
}

/// How a delivery attempt ended.
enum Attempt {
    Delivered,
    Retry(String),
    Fail(String),
}

impl Notifier {
    /// The notifier over `webhooks`, their workers spawned on `rt`, signing with the
    /// Organization's service key valid when each notice is signed (`keys`: a rotation switches
    /// it without a restart; the header names the key); `tls` trusts the roots an `https://`
    /// webhook is checked against.
    pub fn start(
        webhooks: Vec<Webhook>,
        keys: crate::service_keys::ServiceKeys,
        tls: Option<Arc<rustls::ClientConfig>>,
        rt: &tokio::runtime::Handle,
    ) -> Arc<Notifier> {
        let mut queues = Vec::new();
        for w in webhooks {
            let q = Arc::new(Queue {
                items: Mutex::default(),
                wake: Notify::new(),
            });
            queues.push((w.filter.clone(), Arc::clone(&q)));
            rt.spawn(deliver_all(w, q, keys.clone(), tls.clone()));
        }
        Arc::new(Notifier {
            queues,
            link_base: std::sync::OnceLock::new(),
            announced: Mutex::default(),
        })
    }

    /// Sets the links' base URL unless set already (the first caller wins).
    pub fn link_base_default(&self, base: &str) {
        let _ = self.link_base.set(base.trim_end_matches('/').to_owned());
    }

    fn link(&self) -> &str {
        self.link_base.get().map_or("", String::as_str)
    }

    /// Remembers `key`; false if it was announced already.
    fn first_time(&self, key: String) -> bool {
        let mut a = self.announced.lock().unwrap_or_else(|e| e.into_inner());
        let (set, order) = &mut *a;
        if !set.insert(key.clone()) {
            return false;
        }
        order.push_back(key);
        if order.len() > ANNOUNCED_BOUND
            && let Some(old) = order.pop_front()
        {
            set.remove(&old);
        }
        true
    }

    fn enqueue(&self, n: Notice) {
        let n = Arc::new(n);
        for (filter, q) in &self.queues {
            if filter.admits(n.kind, &n.mission_id) {
                q.push(Arc::clone(&n));
            }
        }
    }

    /// The items awaiting a human among `missions` and `work_items` at `now`, as notices not
    /// yet announced; with `announce` false they are only remembered (the items pending when
    /// the notifier starts, announced before a restart or a takeover, or while it was down).
    fn look(
        &self,
        state: &State,
        missions: &BTreeSet<String>,
        work_items: &BTreeSet<String>,
        now: Micros,
        announce: bool,
    ) {
        for id in missions {
            let Some(m) = state.missions.get(id) else {
                continue;
            };
            // A child Mission whose MissionOwner is an Agent awaits that Agent, not a human.
            if m.status != MissionState::AwaitingApproval || m.owner.actor_type != ActorType::Human
            {
                continue;
            }
            let revision = m.submitted_revision.unwrap_or(m.revision);
            if self.first_time(format!("final {id} {revision}")) && announce {
                let mut o = self.common(NoticeKind::Final, m, now);
                o.insert("revision", Value::from(revision));
                o.insert("deadline", Value::string(m.deadline.format()));
                o.insert("deadlineOf", Value::string("mission_deadline"));
                o.insert(
                    "link",
                    Value::string(format!(
                        "{}/mission/{}",
                        self.link(),
                        wasm_core::encoding::url_component(&m.group_id)
                    )),
                );
                self.emit(NoticeKind::Final, id, o);
            }
        }
        for id in work_items {
            let Some(w) = state.work_items.get(id) else {
                continue;
            };
            let Some(m) = state.missions.get(&w.mission_id) else {
                continue;
            };
            let gated = m.status == MissionState::Active
                && m.owner.actor_type == ActorType::Human
                && w.status == WorkItemState::Queued
                && w.assignee_id.is_some()
                && work_exec::execution_approval_required(w)
                && work_exec::current_execution_approval(state, w, now).is_none();
            if !gated || !self.first_time(format!("gate {id} {}", w.ownership_epoch)) || !announce {
                continue;
            }
            let mut o = self.common(NoticeKind::Gate, m, now);
            let mut wi = Object::new();
            wi.insert("id", Value::string(w.id.clone()));
            wi.insert("goal", Value::string(w.contract.goal.clone()));
            wi.insert("ownershipEpoch", Value::from(w.ownership_epoch));
            wi.insert(
                "sideEffectRisk",
                Value::string(w.contract.side_effect_risk.clone()),
            );
            if let Some(owner) = &w.assignee_id {
                wi.insert("owner", Value::string(owner.clone()));
            }
            o.insert("workItem", Value::Object(wi));
            o.insert(
                "deadline",
                w.ownership_lease_expires_at
                    .map_or(Value::Null, |t| Value::string(t.format())),
            );
            o.insert("deadlineOf", Value::string("ownership_lease"));
            o.insert(
                "link",
                Value::string(format!(
                    "{}/mission/{}?work_item={}",
                    self.link(),
                    wasm_core::encoding::url_component(&m.group_id),
                    wasm_core::encoding::url_component(&w.id)
                )),
            );
            self.emit(NoticeKind::Gate, &m.id, o);
        }
    }

    fn common(
        &self,
        kind: NoticeKind,
        m: &wasm_core::authority::projection::Mission,
        now: Micros,
    ) -> Object {
        let mut o = Object::new();
        o.insert("type", Value::string("missionweave.awaiting_human"));
        o.insert("protocolVersion", Value::string("0.1"));
        o.insert("kind", Value::string(kind.as_str()));
        let mut mission = Object::new();
        mission.insert("id", Value::string(m.id.clone()));
        mission.insert("title", Value::string(m.title.clone()));
        mission.insert("groupId", Value::string(m.group_id.clone()));
        mission.insert("owner", m.owner.to_json());
        o.insert("mission", Value::Object(mission));
        o.insert("noticedAt", Value::string(now.format()));
        o
    }

    fn emit(&self, kind: NoticeKind, mission_id: &str, mut o: Object) {
        // The notice's id: the item and its epoch or revision, so a receiver drops a copy.
        let id = match (o.get("workItem"), o.get("revision")) {
            (Some(Value::Object(w)), _) => format!(
                "gate:{}:{}",
                w.get("id").and_then(Value::as_str).unwrap_or_default(),
                w.get("ownershipEpoch")
                    .map(wasm_core::json::to_string)
                    .unwrap_or_default()
            ),
            (_, Some(r)) => format!("final:{mission_id}:{}", wasm_core::json::to_string(r)),
            _ => String::new(),
        };
        o.insert("noticeId", Value::string(id));
        match wasm_core::json::canonicalize(&Value::Object(o)) {
            Ok(body) => self.enqueue(Notice {
                kind,
                mission_id: mission_id.to_owned(),
                body: Bytes::from(body),
            }),
            Err(e) => tracing::warn!(cause = %e, "a notice is not canonical JSON"),
        }
    }
}

/// Every Mission and WorkItem the batch's Events touch, and the latest `occurredAt`.
fn touched(
    state: &State,
    batch: &[(&Outcome, Origin)],
) -> (BTreeSet<String>, BTreeSet<String>, Micros) {
    let mut missions = BTreeSet::new();
    let mut work_items = BTreeSet::new();
    let mut now = Micros::default();
    for (o, _) in batch {
        let Ok(Submitted::Appended(events)) = o else {
            continue;
        };
        for e in events {
            let Some(g) = &e.at.group_id else {
                continue;
            };
            if let Some(gs) = state.groups.get(g) {
                missions.insert(gs.group.mission_id.clone());
            }
            for ptr in ["/payload/workItemId", "/payload/workItem/id"] {
                if let Some(w) = e.value.pointer(ptr).and_then(Value::as_str) {
                    work_items.insert(w.to_owned());
                }
            }
            if let Some(t) = e
                .value
                .pointer("/occurredAt")
                .and_then(Value::as_str)
                .and_then(Micros::parse)
            {
                now = now.max(t);
            }
        }
    }
    (missions, work_items, now)
}

impl Publish for Notifier {
    /// The items pending now are remembered, not announced (at start-up, or when a cluster
    /// node takes the lease: they were announced before, or will be by a human looking).
    fn start(&self, state: &State, _store: &dyn Store) {
        let missions = state.missions.keys().cloned().collect();
        let work_items = state.work_items.keys().cloned().collect();
        let now = state
            .groups
            .values()
            .map(|g| g.last_occurred_at)
            .max()
            .unwrap_or_default();
        self.look(state, &missions, &work_items, now, false);
    }

    fn publish(&self, state: &State, _store: &dyn Store, batch: &[(&Outcome, Origin)]) {
        if self.queues.is_empty() {
            return;
        }
        let (missions, work_items, now) = touched(state, batch);
        if missions.is_empty() && work_items.is_empty() {
            return;
        }
        self.look(state, &missions, &work_items, now, true);
    }
}

/// Two publishers in turn (the hub, then the notifier).
pub struct Both(pub Arc<dyn Publish>, pub Arc<dyn Publish>);

impl Publish for Both {
    fn start(&self, state: &State, store: &dyn Store) {
        self.0.start(state, store);
        self.1.start(state, store);
    }
    fn publish(&self, state: &State, store: &dyn Store, batch: &[(&Outcome, Origin)]) {
        self.0.publish(state, store, batch);
        self.1.publish(state, store, batch);
    }
}

/// The delay before retry `n` (1 for the first retry): base × 2^(n-1), at most the cap.
pub fn backoff(n: u32) -> Duration {
    BACKOFF_BASE
        .saturating_mul(1u32 << n.saturating_sub(1).min(16))
        .min(BACKOFF_CAP)
}

/// The key ID and base64url Ed25519 signature of a notice's body, by the service key valid at
/// `now` (after `org key rotate service`, the new one: the header names it, so a receiver
/// checks it against the Registry); `None` when no held key is valid.
fn sign_notice(
    keys: &crate::service_keys::ServiceKeys,
    body: &[u8],
    now: wasm_core::authority::Micros,
) -> Option<(String, String)> {
    let key = keys.at(now)?;
    let signature = wasm_core::encoding::b64url_encode(&key.signer.sign(body));
    Some((key.key_id.clone(), signature))
}

/// One webhook's worker: its notices in order, each until delivered or given up.
async fn deliver_all(
    w: Webhook,
    q: Arc<Queue>,
    keys: crate::service_keys::ServiceKeys,
    tls: Option<Arc<rustls::ClientConfig>>,
) {
    loop {
        let n = q.pop().await;
        let Some((key_id, signature)) = sign_notice(&keys, &n.body, crate::clock::now()) else {
            metrics::counter!(DELIVERIES, "outcome" => "failed").increment(1);
            tracing::warn!(webhook = %w.url, "webhook gave up: no service key is valid now");
            continue;
        };
        let mut attempt = 1;
        loop {
            let outcome = tokio::time::timeout(
                ATTEMPT_TIMEOUT,
                post(&w, &n.body, &key_id, &signature, tls.clone()),
            )
            .await
            .unwrap_or_else(|_| Attempt::Retry("timed out".into()));
            match outcome {
                Attempt::Delivered => {
                    metrics::counter!(DELIVERIES, "outcome" => "delivered").increment(1);
                    break;
                }
                Attempt::Retry(why) if attempt < MAX_ATTEMPTS => {
                    metrics::counter!(DELIVERIES, "outcome" => "retried").increment(1);
                    tracing::info!(webhook = %w.url, attempt, cause = %why, "webhook retried");
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt += 1;
                }
                Attempt::Retry(why) | Attempt::Fail(why) => {
                    metrics::counter!(DELIVERIES, "outcome" => "failed").increment(1);
                    tracing::warn!(webhook = %w.url, attempt, cause = %why, "webhook gave up");
                    break;
                }
            }
        }
    }
}

/// One POST over a fresh HTTP/1.1 connection (TLS for `https://`).
async fn post(
    w: &Webhook,
    body: &Bytes,
    key_id: &str,
    signature: &str,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Attempt {
    let tcp = match tokio::net::TcpStream::connect(&w.authority).await {
        Ok(s) => s,
        Err(e) => return Attempt::Retry(format!("connect: {e}")),
    };
    let _ = tcp.set_nodelay(true);
    let request = hyper::Request::post(w.path.as_str())
        .header(hyper::header::HOST, host_header(w))
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::USER_AGENT, "weave-console-notify/0.1")
        .header(KEY_ID_HEADER, key_id)
        .header(SIGNATURE_HEADER, signature)
        .body(Full::new(body.clone()));
    let request = match request {
        Ok(r) => r,
        Err(e) => return Attempt::Fail(format!("request: {e}")),
    };
    if w.secure {
        let Some(config) = tls else {
            return Attempt::Fail("no certificate roots for https".into());
        };
        let name = match rustls::pki_types::ServerName::try_from(w.host.clone()) {
            Ok(n) => n,
            Err(e) => return Attempt::Fail(format!("{}: {e}", w.host)),
        };
        match tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
        {
            Ok(s) => send(hyper_util::rt::TokioIo::new(s), request).await,
            // A certificate the roots refuse stays refused: given up at once (counted
            // `failed`) rather than retried for minutes. Other TLS errors may pass.
            Err(e) if refused_certificate(&e) => Attempt::Fail(format!("TLS: {e}")),
            Err(e) => Attempt::Retry(format!("TLS: {e}")),
        }
    } else {
        send(hyper_util::rt::TokioIo::new(tcp), request).await
    }
}

/// Whether a TLS handshake failed on the server's certificate (untrusted, expired, for
/// another name), as `tokio_rustls` reports it: a `rustls::Error` inside the I/O error.
fn refused_certificate(e: &std::io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|r| matches!(r, rustls::Error::InvalidCertificate(_)))
}

fn host_header(w: &Webhook) -> String {
    let default = if w.secure { ":443" } else { ":80" };
    w.authority
        .strip_suffix(default)
        .unwrap_or(&w.authority)
        .to_owned()
}

async fn send<T>(io: T, request: hyper::Request<Full<Bytes>>) -> Attempt
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = match hyper::client::conn::http1::handshake(io).await {
        Ok(x) => x,
        Err(e) => return Attempt::Retry(format!("HTTP: {e}")),
    };
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let response = match sender.send_request(request).await {
        Ok(r) => r,
        Err(e) => return Attempt::Retry(format!("HTTP: {e}")),
    };
    let status = response.status();
    // The answer's body is not read past a small bound: nothing in it is used.
    let _ = http_body_util::Limited::new(response.into_body(), 4096)
        .collect()
        .await;
    if status.is_success() {
        Attempt::Delivered
    } else if status.is_server_error()
        || status == hyper::StatusCode::REQUEST_TIMEOUT
        || status == hyper::StatusCode::TOO_MANY_REQUESTS
    {
        Attempt::Retry(format!("answered {status}"))
    } else {
        Attempt::Fail(format!("answered {status}"))
    }
}

/// The roots an `https://` webhook's certificate is checked against: `ca` (PEM), or the
/// system's bundle (Debian's, then Red Hat's path).
pub fn roots(ca: Option<&std::path::Path>) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let system = [
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
    ];
    let path = match ca {
        Some(p) => p.to_path_buf(),
        None => system
            .iter()
            .map(std::path::PathBuf::from)
            .find(|p| p.is_file())
            .ok_or("no system certificate bundle; pass --notify-ca FILE")?,
    };
    let mut store = rustls::RootCertStore::empty();
    let certs =
        CertificateDer::pem_file_iter(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    for c in certs {
        let c = c.map_err(|e| format!("{}: {e}", path.display()))?;
        // A bundle may hold a certificate rustls does not take; the others still count.
        let _ = store.add(c);
    }
    if store.is_empty() {
        return Err(format!("{} holds no usable certificate", path.display()));
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS: {e}"))?
    .with_root_certificates(store)
    .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Across a rotation the notices are signed by the key valid when they are signed, named in
    /// the header, and each verifies with that key's public half; past the old key's end with
    /// no other key held, nothing is signed.
    #[test]
    fn a_notice_is_signed_by_the_service_key_valid_then() {
        use crate::service_keys::{HeldKey, ServiceKeys};
        use wasm_core::authority::Micros;
        let held = |n: u8, from: i64, ends: Option<i64>| {
            let seed = wasm_core::crypto::SecretSeed::take(&mut [n; 32]);
            HeldKey {
                key_id: format!("k{n}"),
                signer: wasm_core::crypto::ed25519::Signer::from_seed(&seed),
                seed,
                valid_from: Micros::from_seconds(from),
                ends: ends.map(Micros::from_seconds),
            }
        };
        let keys = ServiceKeys::new(vec![held(1, 0, Some(130)), held(2, 100, None)]);
        let body = b"{\"kind\":\"gate\"}";
        for (t, want, n) in [(50, "k1", 1u8), (100, "k2", 2), (120, "k2", 2)] {
            let (key_id, sig) = sign_notice(&keys, body, Micros::from_seconds(t)).expect("signed");
            assert_eq!(key_id, want);
            let public = wasm_core::crypto::SecretSeed::take(&mut [n; 32]).public_key();
            let key = wasm_core::crypto::ed25519::StrictPublicKey::from_bytes(&public).expect("k");
            let raw = wasm_core::encoding::b64url_decode(&sig).expect("b64");
            let sig = wasm_core::crypto::ed25519::StrictSignature::from_bytes(&raw).expect("sig");
            assert!(wasm_core::crypto::ed25519::verify(&key, &sig, body));
        }
        keys.replace(vec![held(1, 0, Some(130))]);
        assert_eq!(sign_notice(&keys, body, Micros::from_seconds(130)), None);
    }

    #[test]
    fn webhook_specs_parse_and_plain_http_stays_on_loopback() {
        let w = parse_webhook("https://chat.example/hook?x=1", false).expect("plain");
        assert_eq!(
            (w.secure, w.authority.as_str(), w.path.as_str()),
            (true, "chat.example:443", "/hook?x=1")
        );
        assert_eq!(w.filter, Filter::default());
        let w = parse_webhook("gate,mission=urn:m:1@http://127.0.0.1:9/h", false).expect("f");
        assert_eq!(w.authority, "127.0.0.1:9");
        assert!(w.filter.admits(NoticeKind::Gate, "urn:m:1"));
        assert!(!w.filter.admits(NoticeKind::Final, "urn:m:1"));
        assert!(!w.filter.admits(NoticeKind::Gate, "urn:m:2"));
        let w = parse_webhook("final@https://[::1]:8443/", false).expect("v6");
        assert_eq!(
            (w.host.as_str(), w.authority.as_str()),
            ("::1", "[::1]:8443")
        );
        // The attack: a notice in clear across the network.
        let e = parse_webhook("http://chat.example/hook", false).expect_err("clear");
        assert!(e.contains("--notify-allow-http"), "{e}");
        assert!(parse_webhook("http://chat.example/hook", true).is_ok());
        assert!(parse_webhook("gates@https://x/", false).is_err());
        assert!(parse_webhook("ftp://x/", false).is_err());
        assert!(parse_webhook("https://user@x/", false).is_err());
        assert!(parse_webhook("https://x:99999/", false).is_err());
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        assert_eq!(backoff(1), BACKOFF_BASE);
        assert_eq!(backoff(2), BACKOFF_BASE * 2);
        assert_eq!(backoff(3), BACKOFF_BASE * 4);
        assert_eq!(backoff(40), BACKOFF_CAP);
    }

    #[test]
    fn a_full_queue_drops_its_oldest() {
        let q = Queue {
            items: Mutex::default(),
            wake: Notify::new(),
        };
        for i in 0..QUEUE_BOUND + 3 {
            q.push(Arc::new(Notice {
                kind: NoticeKind::Gate,
                mission_id: i.to_string(),
                body: Bytes::new(),
            }));
        }
        let items = q.items.lock().expect("lock");
        assert_eq!(items.len(), QUEUE_BOUND);
        assert_eq!(items.front().map(|n| n.mission_id.as_str()), Some("3"));
    }
}

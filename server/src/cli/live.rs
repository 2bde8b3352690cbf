//! `scenarios --url`: the behavioural suite against a live server over the binding. A
//! [`LiveTarget`] is the runner's `Target` (`simulation::scenario`) for one scenario:
//!
//! - **Principals.** Each scenario gets fresh Principals of the server's Organization (the
//!   scenario pool of a `serve --dev-clock` data directory, keys from `dev principals
//!   --scenarios`), as the in-process runner gives each scenario a new Organization: no
//!   scenario sees another's Agent Cards, Sessions or WorkItems (the active-WorkItem limit
//!   counts across Groups, §20). `group-gateway` and `organization-registry` are the
//!   server's own services.
//! - **Names.** The runner works in the scenario's names: Principal IDs
//!   `urn:missionweaveprotocol:<type>:<name>`, the file's `urn:x:` identifiers, and Event IDs
//!   derived from them (`event_id(groupId, sequence)`). On the way out every string is mapped
//!   to the live names (pool Principals, `urn:x:run-<token>:…`, the live Event IDs), and on the
//!   way back answers are mapped to the scenario's, so that a second run never collides with
//!   the first and the expectations compare as in process. A document signed inside a
//!   payload (a Group Snapshot) is signed again with the live key of whoever signed it in the
//!   scenario; one whose signature does not verify there stays unverifiable.
//! - **Time.** Before each step the server's development clock is set to the step's time
//!   (`PUT /api/dev/clock`), so expiries happen where they do in process.
//! - **Transport.** Human steps go over a human session (`/ws?principal=human`), Agent steps
//!   over that Agent's session (HELLO at bootstrap), service steps over `POST /api/commands`.
//!   An Agent without a session of ours (no Agent Card, so HELLO is refused; or its session was
//!   fenced by a Session the scenario opened through the gateway service, since a new HELLO
//!   would open yet another Session Epoch) sends over `POST /api/commands`, as in process no
//!   session is needed to be refused. Over a socket, a refusal is the `ERROR` naming the Action
//!   ID; an acceptance shows as the sender's own `EVENT`s (binding.md, the sender-outcome
//!   rule), and since no receipt frame exists in 0.1 the full Event list is then read as the
//!   exact-retry receipt of the same bytes over HTTP (§15.1, D-12; an exact retry changes
//!   nothing). A step whose Action ID was already accepted is a duplicate.

use crate::endpoint::Endpoint;
use crate::gateway::client::{Client, Incoming};
use simulation::harness::{Envelope, test_seed};
use simulation::scenario::{Answer, Target};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use wasm_core::authority::{Micros, event_id};
use wasm_core::crypto::ed25519::{self, Signer};
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document_with};
use wasm_core::encoding::{b64url_decode, b64url_encode};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::common::ActorType;

/// How long a socket may stay silent after a `COMMAND` before the outcome is read from the
/// receipt: an accepted Command whose Events all fall in Groups where the sender holds no
/// Membership gives the sender no frame (binding.md). The receipt is exact either way (the
/// authority is deterministic); this only bounds the wait.
const QUIET: Duration = Duration::from_millis(1500);

/// Bounds every other wait, so a broken server cannot hang the run.
const PATIENCE: Duration = Duration::from_secs(60);

/// A Principal of the server's Organization, from the scenario principals file.
pub struct LivePrincipal {
    pub name: String,
    pub kind: ActorType,
    pub id: String,
    pub key_id: String,
    pub seed: SecretSeed,
    pub pool: bool,
}

/// The scenario principals file (`dev principals --scenarios`).
pub struct LiveOrg {
    pub principals: Vec<LivePrincipal>,
    pub certificate: Option<String>,
}

impl LiveOrg {
    pub fn load(path: &Path) -> Result<LiveOrg, String> {
        let bytes = zeroize::Zeroizing::new(crate::devorg::read_key_file(path)?);
        let v = json::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let Some(Value::Array(list)) = v.pointer("/principals") else {
            return Err(format!(
                "{}: no principals list; write it with `weave-console dev principals --scenarios`",
                path.display()
            ));
        };
        let mut principals = Vec::new();
        for p in list {
            let s = |ptr: &str| {
                p.pointer(ptr)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{}: a principal lacks {ptr}", path.display()))
            };
            let kind = match s("/type")?.as_str() {
                "human" => ActorType::Human,
                "agent" => ActorType::Agent,
                "service" => ActorType::Service,
                other => return Err(format!("{}: unknown type {other}", path.display())),
            };
            principals.push(LivePrincipal {
                name: s("/name")?,
                kind,
                id: s("/id")?,
                key_id: s("/keyId")?,
                seed: SecretSeed::from_b64url(&s("/privateKey")?)
                    .ok_or_else(|| format!("{}: a privateKey is not 32 bytes", path.display()))?,
                pool: matches!(p.pointer("/pool"), Some(Value::Bool(true))),
            });
        }
        Ok(LiveOrg {
            principals,
            certificate: v
                .pointer("/tlsCertificate")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    fn get(&self, name: &str) -> Option<&LivePrincipal> {
        self.principals.iter().find(|p| p.name == name)
    }
}

impl Endpoint {
    /// Checks that the file's keys are the server's (`GET /api/registry`).
    pub async fn check_keys(&self, org: &LiveOrg) -> Result<(), String> {
        let (status, body) = self.http("GET", "/api/registry", b"").await?;
        if status != 200 {
            return Err(format!("GET /api/registry answered {status}"));
        }
        let v = json::parse(&body).map_err(|e| format!("GET /api/registry: {e}"))?;
        let served: HashMap<String, String> = match v.pointer("/bindings") {
            Some(Value::Array(b)) => b
                .iter()
                .filter_map(|b| {
                    Some((
                        b.pointer("/keyId")?.as_str()?.to_owned(),
                        b.pointer("/publicKey")?.as_str()?.to_owned(),
                    ))
                })
                .collect(),
            _ => HashMap::new(),
        };
        for p in &org.principals {
            if served.get(&p.key_id) != Some(&b64url_encode(&p.seed.public_key())) {
                return Err(format!(
                    "the principals file does not belong to this server: {} is not served as \
                     in the file",
                    p.key_id
                ));
            }
        }
        Ok(())
    }
}

/// How the run's steps travelled (printed by `scenarios --url`).
#[derive(Debug, Default, Clone)]
pub struct Transport {
    pub agent_sessions: usize,
    pub human_sessions: usize,
    /// Service steps (`POST /api/commands`).
    pub services: usize,
    /// Agent steps without a session of ours (no card, or fenced by a scenario's Session).
    pub agents_over_http: usize,
    /// Accepted over a socket without a frame for the sender (read from the receipt).
    pub quiet: usize,
    /// Accepted over a socket: the sender's own `EVENT` frames came first.
    pub own_events: usize,
}

impl Transport {
    pub fn line(&self) -> String {
        format!(
            "live: {} steps over Agent sessions, {} over human sessions, {} service steps and \
             {} Agent steps without a session over POST /api/commands; accepted over a socket: \
             {} announced by the sender's own EVENT frames, {} without a frame for the sender",
            self.agent_sessions,
            self.human_sessions,
            self.services,
            self.agents_over_http,
            self.own_events,
            self.quiet
        )
    }
}

/// The pool Principals handed out in this run (fresh ones only: an Agent the server already
/// knows, that is one whose HELLO succeeds, was used by an earlier run).
#[derive(Default)]
pub struct Allocator {
    used: BTreeSet<String>,
    /// Every finished scenario adds its [`Transport`] here.
    pub transport: Arc<std::sync::Mutex<Transport>>,
}

impl Allocator {
    async fn agent(&mut self, org: &LiveOrg, ep: &Endpoint) -> Result<String, String> {
        for p in org
            .principals
            .iter()
            .filter(|p| p.pool && p.kind == ActorType::Agent)
        {
            if self.used.contains(&p.name) {
                continue;
            }
            self.used.insert(p.name.clone());
            let mut c = ep.socket(false).await?;
            let signer = Signer::from_seed(&p.seed);
            let hello = tokio::time::timeout(PATIENCE, c.hello(&p.id, &p.key_id, &signer))
                .await
                .map_err(|_| "HELLO: no answer".to_owned())?;
            if hello.is_err() {
                return Ok(p.name.clone()); // no Agent Card yet: fresh
            }
        }
        Err(
            "the scenario pool has no fresh Agent left: start the server on a new data \
             directory (`serve --dev-clock --data NEW_DIR`)"
                .into(),
        )
    }
}

/// The scenario-name ↔ live-name maps of one scenario.
struct Names {
    /// `urn:x:` becomes `urn:x:<run>:`.
    run: String,
    /// Exact strings: Principal IDs, key IDs, public keys.
    fwd: HashMap<String, String>,
    back: HashMap<String, String>,
    /// Principal IDs inside longer strings (longest first).
    ids: Vec<(String, String)>,
    events_fwd: HashMap<String, String>,
    events_back: HashMap<String, String>,
    /// Scenario Principal name → live Principal name.
    live_of: BTreeMap<String, String>,
}

const EVENT_PREFIX: &str = "urn:missionweaveprotocol:event:";

/// `v` with every `{"type": "system", …}` object spelled `{"type": "service", …}`.
fn system_as_service(v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(system_as_service).collect()),
        Value::Object(o) => {
            let mut n = Object::new();
            for (k, x) in o.iter() {
                let x = if k.as_str() == "type" && x.as_str() == Some("system") {
                    Value::string("service")
                } else {
                    system_as_service(x)
                };
                n.insert(k.clone(), x);
            }
            Value::Object(n)
        }
        other => other.clone(),
    }
}

impl Names {
    fn scenario_id(kind: ActorType, name: &str) -> String {
        format!("urn:missionweaveprotocol:{kind}:{name}")
    }

    fn add(&mut self, scenario: String, live: String) {
        self.back.insert(live.clone(), scenario.clone());
        self.fwd.insert(scenario, live);
    }

    fn replace_ids(s: &str, pairs: &[(String, String)]) -> String {
        let mut out = s.to_owned();
        for (from, to) in pairs {
            if !out.contains(from.as_str()) {
                continue;
            }
            let mut next = String::new();
            let mut rest = out.as_str();
            while let Some(i) = rest.find(from.as_str()) {
                let end = i + from.len();
                let boundary = rest[end..]
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'));
                next.push_str(&rest[..i]);
                next.push_str(if boundary { to } else { from });
                rest = &rest[end..];
            }
            next.push_str(rest);
            out = next;
        }
        out
    }

    fn fwd_str(&self, s: &str) -> String {
        if let Some(v) = self.fwd.get(s) {
            return v.clone();
        }
        if s.starts_with(EVENT_PREFIX) {
            return self
                .events_fwd
                .get(s)
                .cloned()
                .unwrap_or_else(|| s.to_owned());
        }
        let s = s.replace("urn:x:", &format!("urn:x:{}:", self.run));
        Names::replace_ids(&s, &self.ids)
    }

    fn back_str(&self, s: &str) -> String {
        if let Some(v) = self.back.get(s) {
            return v.clone();
        }
        if s.starts_with(EVENT_PREFIX) {
            return self
                .events_back
                .get(s)
                .cloned()
                .unwrap_or_else(|| s.to_owned());
        }
        let s = s.replace(&format!("urn:x:{}:", self.run), "urn:x:");
        let pairs: Vec<(String, String)> = self
            .ids
            .iter()
            .map(|(a, b)| (b.clone(), a.clone()))
            .collect();
        Names::replace_ids(&s, &pairs)
    }

    /// Records the Event IDs of sequences `1..=through` of scenario Group `group`.
    fn learn_group(&mut self, group: &str, through: u64) {
        let live = self.fwd_str(group);
        for seq in 1..=through {
            let s = event_id(group, seq);
            if self.events_fwd.contains_key(&s) {
                continue;
            }
            let l = event_id(&live, seq);
            self.events_back.insert(l.clone(), s.clone());
            self.events_fwd.insert(s, l);
        }
    }

    /// Records the Event IDs an answer's Events carry (live Group and sequence).
    fn learn_event(&mut self, e: &Value) {
        let (Some(g), Some(Value::Number(n))) = (
            e.pointer("/groupId").and_then(Value::as_str),
            e.pointer("/sequence"),
        ) else {
            return;
        };
        let Some(seq) = n.as_safe_u64() else { return };
        let scenario_group = self.back_str(g);
        let s = event_id(&scenario_group, seq);
        let l = event_id(g, seq);
        self.events_back.insert(l.clone(), s.clone());
        self.events_fwd.insert(s, l);
    }

    fn back_value(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::string(self.back_str(s.as_str())),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.back_value(x)).collect()),
            Value::Object(o) => {
                let mut n = Object::new();
                for (k, x) in o.iter() {
                    n.insert(k.clone(), self.back_value(x));
                }
                Value::Object(n)
            }
            other => other.clone(),
        }
    }
}

/// One scenario against the live server.
pub struct LiveTarget<'o> {
    rt: Arc<tokio::runtime::Runtime>,
    ep: Endpoint,
    org: &'o LiveOrg,
    names: Names,
    /// The scenario's Principals by name (`group-gateway` and `organization-registry` too).
    kinds: BTreeMap<String, ActorType>,
    /// Open sessions by live Principal ID.
    sessions: HashMap<String, Client>,
    /// Agents whose session a scenario step fenced (they send over HTTP from then on).
    fenced: BTreeSet<String>,
    /// (actor, Action ID) of every accepted Command.
    accepted: BTreeSet<(String, String)>,
    clock: Option<Micros>,
    counter: u64,
    transport: Transport,
    totals: Arc<std::sync::Mutex<Transport>>,
}

impl<'o> LiveTarget<'o> {
    /// Maps the scenario's Principals onto fresh pool Principals.
    pub fn open(
        ep: &Endpoint,
        org: &'o LiveOrg,
        alloc: &mut Allocator,
        principals: &[(&str, ActorType)],
    ) -> Result<LiveTarget<'o>, String> {
        let rt = Arc::new(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?,
        );
        let run = format!(
            "run-{}",
            wasm_core::encoding::hex(&crate::gateway::random::<6>())
        );
        let mut names = Names {
            run,
            fwd: HashMap::new(),
            back: HashMap::new(),
            ids: Vec::new(),
            events_fwd: HashMap::new(),
            events_back: HashMap::new(),
            live_of: BTreeMap::new(),
        };
        let mut kinds = BTreeMap::new();
        let mut all: Vec<(String, ActorType)> = principals
            .iter()
            .map(|(n, t)| ((*n).to_owned(), *t))
            .collect();
        all.push(("group-gateway".into(), ActorType::Service));
        all.push(("organization-registry".into(), ActorType::Service));
        let (mut humans, mut services) = (0usize, 0usize);
        let pool = |kind: ActorType| {
            org.principals
                .iter()
                .filter(move |p| p.pool && p.kind == kind)
                .map(|p| p.name.clone())
                .collect::<Vec<_>>()
        };
        let (pool_humans, pool_services) = (pool(ActorType::Human), pool(ActorType::Service));
        for (name, kind) in &all {
            let live = match (name.as_str(), kind) {
                ("group-gateway" | "organization-registry", _) => name.clone(),
                (_, ActorType::Human) => {
                    humans += 1;
                    pool_humans.get(humans - 1).cloned().ok_or(
                        "the scenario pool has too few humans for this scenario".to_owned(),
                    )?
                }
                (_, ActorType::Service) => {
                    services += 1;
                    pool_services.get(services - 1).cloned().ok_or(
                        "the scenario pool has too few services for this scenario".to_owned(),
                    )?
                }
                (_, ActorType::Agent) => rt.block_on(alloc.agent(org, ep))?,
            };
            let p = org
                .get(&live)
                .ok_or_else(|| format!("the principals file has no {live}"))?;
            let scenario_id = Names::scenario_id(*kind, name);
            names.add(scenario_id.clone(), p.id.clone());
            names.ids.push((scenario_id, p.id.clone()));
            names.add(
                format!("urn:missionweaveprotocol:key:{name}"),
                p.key_id.clone(),
            );
            names.add(
                b64url_encode(&ed25519::public_key_of(&test_seed(name))),
                b64url_encode(&p.seed.public_key()),
            );
            names.live_of.insert(name.clone(), live);
            kinds.insert(name.clone(), *kind);
        }
        names.ids.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        Ok(LiveTarget {
            rt,
            ep: ep.clone(),
            org,
            names,
            kinds,
            sessions: HashMap::new(),
            fenced: BTreeSet::new(),
            accepted: BTreeSet::new(),
            clock: None,
            counter: 0,
            transport: Transport::default(),
            totals: Arc::clone(&alloc.transport),
        })
    }

    fn live(&self, name: &str) -> Option<&'o LivePrincipal> {
        self.names.live_of.get(name).and_then(|l| self.org.get(l))
    }

    /// Maps a payload value to the live names, signing again any document signed inside it.
    fn fwd_value(&mut self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::string(self.names.fwd_str(s.as_str())),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.fwd_value(x)).collect()),
            Value::Object(o) => {
                // A snapshot lists Event IDs of its Group: learn them first.
                if let (Some(g), Some(Value::Array(ids))) =
                    (o.get("groupId").and_then(Value::as_str), o.get("eventIds"))
                {
                    let g = g.to_owned();
                    self.names.learn_group(&g, ids.len() as u64 + 8);
                }
                let mut n = Object::new();
                for (k, x) in o.iter() {
                    n.insert(k.clone(), self.fwd_value(x));
                }
                let mut out = Value::Object(n);
                self.resign(v, &mut out);
                out
            }
            other => other.clone(),
        }
    }

    /// If `original` is signed (a Signed Document's `signature` object, or a manifest's
    /// `signature` string; both over the JCS of the document without it) and the signature
    /// verifies in the scenario's world (a harness key of one of its Principals),
    /// `translated` gets a valid signature by that Principal's live key; otherwise its
    /// signature is left as it is, and stays invalid.
    fn resign(&self, original: &Value, translated: &mut Value) {
        let raw = match original.pointer("/signature") {
            Some(Value::Object(sig)) => sig.get("value").and_then(Value::as_str),
            Some(Value::String(sig)) => Some(sig.as_str()),
            _ => None,
        };
        let Some(raw) = raw.and_then(|r| b64url_decode(r).ok()) else {
            return;
        };
        // The forms a verifier may sign over: as sent, and with the reference's `system`
        // actor type spelled `service` (D-28, as the authority reads a snapshot).
        let forms = |doc: &Value| -> Vec<Vec<u8>> {
            let Value::Object(o) = doc else {
                return Vec::new();
            };
            let mut unsigned = o.clone();
            unsigned.remove("signature");
            let plain = Value::Object(unsigned);
            [plain.clone(), system_as_service(&plain)]
                .iter()
                .filter_map(|v| json::canonicalize(v).ok())
                .collect()
        };
        let found = self.kinds.keys().find_map(|name| {
            let key =
                ed25519::StrictPublicKey::from_bytes(&ed25519::public_key_of(&test_seed(name)))
                    .ok()?;
            let sig = ed25519::StrictSignature::from_bytes(&raw).ok()?;
            forms(original)
                .iter()
                .position(|bytes| ed25519::verify(&key, &sig, bytes))
                .map(|form| (name.clone(), form))
        });
        let Some((name, form)) = found else { return };
        let Some(live) = self.live(&name) else { return };
        let Some(bytes) = forms(translated).into_iter().nth(form) else {
            return;
        };
        let value = Value::string(b64url_encode(&Signer::from_seed(&live.seed).sign(&bytes)));
        let Value::Object(t) = translated else { return };
        match t.get_mut("signature") {
            Some(Value::Object(sig)) => {
                sig.insert("value", value);
            }
            Some(s @ Value::String(_)) => *s = value,
            _ => {}
        }
    }

    async fn clock_at(&mut self, now: Micros) -> Result<(), String> {
        if self.clock != Some(now) {
            self.ep.set_clock(Some(now)).await?;
            self.clock = Some(now);
        }
        Ok(())
    }

    /// `POST /api/commands`.
    async fn post(&self, bytes: &[u8]) -> Result<(Answer, Option<bool>), String> {
        let (status, body) = self.ep.http("POST", "/api/commands", bytes).await?;
        let v = json::parse(&body).map_err(|e| format!("POST /api/commands answered {e}"))?;
        if status == 200 {
            let duplicate = v.pointer("/status").and_then(Value::as_str) == Some("duplicate");
            let events = match v.pointer("/events") {
                Some(Value::Array(e)) => e.clone(),
                _ => return Err("an accepted Command without events".into()),
            };
            return Ok((Answer::Events(events), Some(duplicate)));
        }
        let s = |p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Ok((
            Answer::Error {
                code: s("/code"),
                message: s("/message"),
            },
            None,
        ))
    }

    /// Over `who`'s session: the refusal, or the receipt of the acceptance.
    async fn over_socket(
        &mut self,
        who: &str,
        action: &str,
        bytes: &[u8],
    ) -> Result<(Answer, Option<bool>), String> {
        let Some(client) = self.sessions.get_mut(who) else {
            return Err("no session".into());
        };
        let frame = client.command_frame(bytes)?;
        client.send(&frame).await?;
        loop {
            // Quiet for a while: decided without a frame for the sender.
            let Ok(next) = tokio::time::timeout(QUIET, client.next()).await else {
                self.transport.quiet += 1;
                break;
            };
            match next? {
                Incoming::Frame(f) => {
                    let s = |p: &str| f.pointer(p).and_then(Value::as_str);
                    match s("/frameType") {
                        Some("ERROR") if s("/error/relatedActionId") == Some(action) => {
                            return Ok((
                                Answer::Error {
                                    code: s("/error/code").unwrap_or_default().to_owned(),
                                    message: s("/error/message").unwrap_or_default().to_owned(),
                                },
                                None,
                            ));
                        }
                        Some("EVENT") if s("/event/cause/id") == Some(action) => {
                            self.transport.own_events += 1;
                            break;
                        }
                        // Late frames of earlier Commands.
                        _ => {}
                    }
                }
                Incoming::Closed => {
                    self.sessions.remove(who);
                    return Err(format!("{who}'s session closed"));
                }
            }
        }
        // The receipt: the same bytes again (an exact retry, §15.1).
        let (answer, _) = self.post(bytes).await?;
        Ok((answer, Some(false)))
    }

    async fn submit_async(&mut self, bytes: &[u8], now: Micros) -> Result<Answer, String> {
        self.clock_at(now).await?;
        let v = json::parse(bytes).map_err(|e| e.to_string())?;
        let action = v
            .pointer("/actionId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let actor = v
            .pointer("/actor/id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let kind = v.pointer("/actor/type").and_then(Value::as_str);
        // A human's session opens at its first step (no Session Epoch exists for humans).
        if kind == Some("human")
            && !self.sessions.contains_key(&actor)
            && let Some(p) = self.org.principals.iter().find(|p| p.id == actor)
        {
            self.hello(p).await?;
        }
        let over_socket = self.sessions.contains_key(&actor) && !self.fenced.contains(&actor);
        let t = &mut self.transport;
        match (over_socket, kind) {
            (true, Some("human")) => t.human_sessions += 1,
            (true, _) => t.agent_sessions += 1,
            (false, Some("agent")) => t.agents_over_http += 1,
            (false, _) => t.services += 1,
        }
        let (answer, duplicate) = if over_socket {
            self.over_socket(&actor, &action, bytes).await?
        } else {
            self.post(bytes).await?
        };
        Ok(match answer {
            Answer::Events(events) => {
                for e in &events {
                    self.names.learn_event(e);
                    // A Session opened by a step fences that Agent's socket (§6.3).
                    if e.pointer("/kind").and_then(Value::as_str)
                        == Some("ext.missionweaveprotocol.identity.session_opened")
                        && let Some(agent) = e.pointer("/payload/agentId").and_then(Value::as_str)
                        && self.sessions.contains_key(agent)
                    {
                        self.fenced.insert(agent.to_owned());
                    }
                }
                // Action IDs are per actor (§15.1).
                let first = self.accepted.insert((actor.clone(), action));
                // Over HTTP the authority says so; over a socket the receipt always reads as
                // an exact retry, so an Action ID accepted before is the duplicate.
                let dup = if over_socket {
                    !first
                } else {
                    duplicate == Some(true)
                };
                if dup {
                    Answer::Duplicate
                } else {
                    Answer::Events(events.iter().map(|e| self.names.back_value(e)).collect())
                }
            }
            Answer::Error { code, message } => Answer::Error {
                code,
                message: self.names.back_str(&message),
            },
            Answer::Duplicate => Answer::Duplicate,
        })
    }

    /// HELLO as the live Principal `p`.
    async fn hello(&mut self, p: &LivePrincipal) -> Result<(), String> {
        let mut c = self.ep.socket(p.kind == ActorType::Human).await?;
        let signer = Signer::from_seed(&p.seed);
        tokio::time::timeout(PATIENCE, c.hello(&p.id, &p.key_id, &signer))
            .await
            .map_err(|_| "HELLO: no answer".to_owned())?
            .map_err(|e| format!("HELLO of {} refused: {}", p.name, json::to_string(&e)))?;
        self.sessions.insert(p.id.clone(), c);
        Ok(())
    }

    async fn bootstrap_async(&mut self, agents: &[&str], now: Micros) -> Result<(), String> {
        self.clock_at(now).await?;
        for name in agents {
            let p = self
                .live(name)
                .ok_or_else(|| format!("unknown Agent {name}"))?;
            let registry = self
                .live("organization-registry")
                .ok_or("no organization-registry key")?;
            let mut card = Object::new();
            card.insert("agentId", Value::string(p.id.clone()));
            card.insert("version", Value::from(1u64));
            card.insert("displayName", Value::string((*name).to_owned()));
            card.insert(
                "owner",
                Value::string("urn:missionweaveprotocol:human:operations"),
            );
            card.insert(
                "publicKey",
                Value::string(b64url_encode(&p.seed.public_key())),
            );
            card.insert("capabilities", Value::Array(vec![]));
            card.insert("issuedAt", Value::string(now.format()));
            card.insert("signature", Value::string("test"));
            let mut payload = Object::new();
            payload.insert("card", Value::Object(card));
            let bytes = self.signed(
                registry,
                "ext.missionweaveprotocol.registry.agent_card_register",
                &Envelope::default(),
                payload,
                now,
            )?;
            if let (Answer::Error { code, message }, _) = self.post(&bytes).await? {
                return Err(format!("{name}'s Agent Card: {code}: {message}"));
            }
            self.hello(p).await?;
        }
        Ok(())
    }

    /// A Command of live Principal `p`, built as the harness builds it (`Harness::command`).
    fn signed(
        &mut self,
        p: &LivePrincipal,
        kind: &str,
        env: &Envelope,
        payload: Object,
        issued_at: Micros,
    ) -> Result<Vec<u8>, String> {
        self.counter += 1;
        let mut o = Object::new();
        o.insert("protocolVersion", Value::string("0.1"));
        let action = env.action_id.clone().unwrap_or_else(|| {
            format!(
                "urn:missionweaveprotocol:action:{}:{}",
                self.names.run, self.counter
            )
        });
        o.insert("actionId", Value::string(action.clone()));
        let mut actor = Object::new();
        actor.insert("type", Value::string(p.kind.as_str()));
        actor.insert("id", Value::string(p.id.clone()));
        o.insert("actor", Value::Object(actor));
        for (k, v) in [
            ("sessionEpoch", env.session_epoch),
            ("membershipEpoch", env.membership_epoch),
            ("coordinatorEpoch", env.coordinator_epoch),
        ] {
            if let Some(v) = v {
                o.insert(k, Value::from(v));
            }
        }
        for (k, v) in [
            ("groupId", &env.group_id),
            ("conversationId", &env.conversation_id),
            ("workItemId", &env.work_item_id),
            (
                "cooperationOverrideGrantId",
                &env.cooperation_override_grant_id,
            ),
        ] {
            if let Some(v) = v {
                o.insert(k, Value::string(v.clone()));
            }
        }
        o.insert("kind", Value::string(kind.to_owned()));
        if let Some(r) = env.expected_revision {
            o.insert("expectedRevision", Value::from(r));
        }
        o.insert("correlationId", Value::string(action));
        o.insert("issuedAt", Value::string(issued_at.format_whole_seconds()));
        o.insert("payload", Value::Object(payload));
        if let Some(x) = &env.extensions {
            o.insert("extensions", x.clone());
        }
        let mut doc = Value::Object(o);
        sign_document_with(
            &mut doc,
            DocumentKind::Command,
            &p.key_id,
            &Signer::from_seed(&p.seed),
        )
        .map_err(|e| format!("{kind} cannot be signed: {e}"))?;
        Ok(json::to_string(&doc).into_bytes())
    }
}

impl Drop for LiveTarget<'_> {
    fn drop(&mut self) {
        if let Ok(mut t) = self.totals.lock() {
            let mine = &self.transport;
            t.agent_sessions += mine.agent_sessions;
            t.human_sessions += mine.human_sessions;
            t.services += mine.services;
            t.agents_over_http += mine.agents_over_http;
            t.quiet += mine.quiet;
            t.own_events += mine.own_events;
        }
    }
}

impl Target for LiveTarget<'_> {
    fn submit(&mut self, bytes: &[u8], now: Micros) -> Answer {
        let rt = Arc::clone(&self.rt);
        rt.block_on(self.submit_async(bytes, now))
            .unwrap_or_else(|e| Answer::Error {
                code: "TARGET_FAILED".into(),
                message: e,
            })
    }

    fn principal_id(&self, name: &str) -> Option<String> {
        self.kinds.get(name).map(|k| Names::scenario_id(*k, name))
    }

    fn principal_names(&self) -> Vec<String> {
        self.kinds.keys().cloned().collect()
    }

    fn command(
        &mut self,
        name: &str,
        kind: &str,
        env: &Envelope,
        payload: Object,
        now: Micros,
    ) -> Vec<u8> {
        let Some(p) = self.live(name) else {
            return Vec::new();
        };
        let t = |s: &Option<String>, n: &Names| s.as_deref().map(|s| n.fwd_str(s));
        let env = Envelope {
            group_id: t(&env.group_id, &self.names),
            work_item_id: t(&env.work_item_id, &self.names),
            conversation_id: t(&env.conversation_id, &self.names),
            cooperation_override_grant_id: t(&env.cooperation_override_grant_id, &self.names),
            action_id: t(&env.action_id, &self.names),
            extensions: env.extensions.as_ref().map(|x| self.fwd_value(x)),
            ..env.clone()
        };
        let payload = match self.fwd_value(&Value::Object(payload)) {
            Value::Object(o) => o,
            _ => Object::new(),
        };
        self.signed(p, kind, &env, payload, now).unwrap_or_default()
    }

    fn bootstrap_agents(&mut self, agents: &[&str], now: Micros) -> Result<(), String> {
        let rt = Arc::clone(&self.rt);
        rt.block_on(self.bootstrap_async(agents, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        let mut n = Names {
            run: "run-ab".into(),
            fwd: HashMap::new(),
            back: HashMap::new(),
            ids: Vec::new(),
            events_fwd: HashMap::new(),
            events_back: HashMap::new(),
            live_of: BTreeMap::new(),
        };
        for (s, l) in [
            (
                "urn:missionweaveprotocol:agent:coord",
                "urn:missionweaveprotocol:agent:scn-a001",
            ),
            (
                "urn:missionweaveprotocol:agent:coord2",
                "urn:missionweaveprotocol:agent:scn-a002",
            ),
        ] {
            n.add(s.into(), l.into());
            n.ids.push((s.into(), l.into()));
        }
        n.ids.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        n
    }

    #[test]
    fn names_map_out_and_back() {
        let mut n = names();
        assert_eq!(n.fwd_str("urn:x:group:g"), "urn:x:run-ab:group:g");
        assert_eq!(
            n.back_str("urn:x:run-ab:group:g:mission"),
            "urn:x:group:g:mission"
        );
        // Whole IDs, and IDs inside text, with a boundary (coord is not coord2's prefix).
        assert_eq!(
            n.fwd_str("urn:missionweaveprotocol:agent:coord2"),
            "urn:missionweaveprotocol:agent:scn-a002"
        );
        assert_eq!(
            n.fwd_str("see urn:missionweaveprotocol:agent:coord, then urn:missionweaveprotocol:agent:coord2"),
            "see urn:missionweaveprotocol:agent:scn-a001, then urn:missionweaveprotocol:agent:scn-a002"
        );
        assert_eq!(
            n.back_str("urn:missionweaveprotocol:agent:scn-a001:note"),
            "urn:missionweaveprotocol:agent:coord:note"
        );
        // Event IDs follow their Group.
        n.learn_group("urn:x:group:g", 3);
        let scenario = event_id("urn:x:group:g", 2);
        let live = event_id("urn:x:run-ab:group:g", 2);
        assert_eq!(n.fwd_str(&scenario), live);
        assert_eq!(n.back_str(&live), scenario);
        let mut e = Object::new();
        e.insert("groupId", Value::string("urn:x:run-ab:group:h"));
        e.insert("sequence", Value::from(7u64));
        n.learn_event(&Value::Object(e));
        assert_eq!(
            n.back_str(&event_id("urn:x:run-ab:group:h", 7)),
            event_id("urn:x:group:h", 7)
        );
        // Strings the maps do not know pass unchanged.
        assert_eq!(n.fwd_str("plain text"), "plain text");
        assert_eq!(
            n.back_str("urn:missionweaveprotocol:event:unknown"),
            "urn:missionweaveprotocol:event:unknown"
        );
    }

    #[test]
    fn system_actors_read_as_services() {
        let v = json::parse_str(
            r#"{"createdBy":{"type":"system","id":"a"},"policyLog":[{"actor":{"type":"system"}}],"note":"system"}"#,
        )
        .unwrap_or(Value::Null);
        assert_eq!(
            json::to_string(&system_as_service(&v)),
            r#"{"createdBy":{"type":"service","id":"a"},"policyLog":[{"actor":{"type":"service"}}],"note":"system"}"#
        );
    }
}

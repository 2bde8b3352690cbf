//! `weave-console dev …`: development tools that act on a running development server like any
//! client: they sign Commands with keys of the development Organization (read from the
//! server's data directory, `DIR/organization.json`) and submit them over
//! `POST URL/api/commands`.
//!
//! - `dev principals` registers the Agents the principals file names (their signed Agent
//!   Cards, §6.1), creates ACTIVE root Missions (payloads.md §6.1) and writes the file an
//!   external Agent needs to join (README, "Joining a development server as an external
//!   Agent").
//! - `dev approve mission | execution | override` signs, as the development human (the
//!   MissionOwner), the decisions a demo pauses at: `mission.approve` or
//!   `mission.request_changes` (§6.7, §6.8), `approval.grant_execution` (§6.31) and
//!   `policy.grant_cooperation_override` (§6.32). The current revision, epochs and hashes are
//!   read from the server's store (`DIR/authority.sqlite`, read-only), folded with the core's
//!   own reducer.
//!
//! Conversation is not authority: these tools sign Commands; no Message authorizes anything.

use crate::devorg::{self, DevOrganization, DevPrincipal, Envelope};
use crate::endpoint::parse_response;
use clap::{Args, Subcommand, ValueEnum};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use wasm_core::authority::{Micros, State, evolve};
use wasm_core::crypto::registry::RegistryEvidence;
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{self, Object, Value};
use wasm_core::model::ToJson;
use wasm_core::model::common::{Actor, ActorType};
use wasm_core::model::error::ErrorCode;
use wasm_core::model::membership::MembershipState;
use wasm_core::model::work_item::WorkItemState;

/// The Mission permissions `dev principals` grants, so that `approval.grant_execution` can
/// approve these operations (payloads.md §6.31: a subset of `Mission.permissions`).
pub const DEV_PERMISSIONS: &[&str] = &["repo.write", "tests.run", "deploy.staging", "network"];

/// Each of the six budget dimensions of a development Mission (payloads.md §2.3, §8): large,
/// never `null` (a `null` dimension grants nothing).
pub const DEV_BUDGET: u64 = 1_000_000_000_000;

/// The Coordinator lease of a development Mission: one year, the most a payload may ask for.
pub const DEV_LEASE_SECONDS: u64 = 31_536_000;

/// A development Mission's deadline: four weeks after its creation.
pub const DEV_DEADLINE_SECONDS: u64 = 28 * 24 * 3600;

/// How often a Command refused with `BACKPRESSURE` (or cut by the server's timeout) is sent
/// again, unchanged (an exact retry is idempotent, §15.1).
const MAX_RETRIES: u32 = 50;

#[derive(Debug, Subcommand)]
pub enum DevCommand {
    /// Register the external-Agent principals, create ACTIVE Missions and write the
    /// principals file (JSON, mode 0600) an external Agent needs to join this server.
    Principals(PrincipalsArgs),
    /// Sign and submit a decision of the development human (the MissionOwner).
    #[command(subcommand)]
    Approve(ApproveCommand),
}

/// The running server and its data directory.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// The server's base URL: `http://` on loopback, or `https://` with `--ca` (a `--tls`
    /// development server's `DATA/tls/dev-cert.pem`).
    #[arg(
        long,
        value_name = "URL",
        env = "WEAVE_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub url: String,
    /// The PEM certificate(s) to trust for an `https://` URL.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// The server's data directory (its `organization.json` and `authority.sqlite`).
    #[arg(long, value_name = "DIR", env = "WEAVE_DATA", default_value = "data")]
    pub data: PathBuf,
}

#[derive(Debug, Args)]
pub struct PrincipalsArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Where to write the principals file (replaced if it exists; mode 0600).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Load-test Agents to include (`load-01` …), at most 32.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(0..=devorg::LOAD_AGENTS as i64))]
    pub load_agents: u16,
    /// Further ACTIVE Missions for the `missions` list (besides `mission`).
    #[arg(long, value_name = "G", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(0..=1000))]
    pub missions: u16,
    /// Write the scenario principals file for `scenarios --url` instead: every Principal of
    /// the Organization with its key (the services and the scenario pool of a `serve
    /// --dev-clock` data directory included) and the server's development certificate.
    /// Nothing is sent to the server.
    #[arg(long, conflicts_with_all = ["load_agents", "missions"])]
    pub scenarios: bool,
}

#[derive(Debug, Subcommand)]
pub enum ApproveCommand {
    /// Approve a Mission submitted for approval (`mission.approve`, at its submitted revision
    /// and Artifact hashes), or request changes with --request-changes.
    Mission(ApproveMissionArgs),
    /// Grant a WorkItem's execution gate (`approval.grant_execution`) to its current owner.
    Execution(ApproveExecutionArgs),
    /// Grant a one-shot Cooperation Override (`policy.grant_cooperation_override`).
    Override(ApproveOverrideArgs),
}

#[derive(Debug, Args)]
pub struct ApproveMissionArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// The Mission ID.
    #[arg(long, value_name = "ID")]
    pub mission: String,
    /// Request changes instead of approving, with this feedback (`mission.request_changes`).
    #[arg(long, value_name = "FEEDBACK")]
    pub request_changes: Option<String>,
    /// A comment stored with the Approval.
    #[arg(long, value_name = "TEXT", conflicts_with = "request_changes")]
    pub comments: Option<String>,
}

#[derive(Debug, Args)]
pub struct ApproveExecutionArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// The WorkItem ID (queued, with an owner: after `work.accept_offer`).
    #[arg(long, value_name = "ID")]
    pub work_item: String,
    /// The operations approved (a subset of the Mission's permissions).
    #[arg(long, value_name = "OP,…", value_delimiter = ',', required = true)]
    pub operations: Vec<String>,
    /// The resources approved (a subset of the contract's `allowedResources`).
    #[arg(long, value_name = "RES,…", value_delimiter = ',')]
    pub resources: Vec<String>,
    /// How long the approval lasts (it must end within the owner's ownership lease).
    #[arg(long, value_name = "SECONDS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    pub expires_in: u64,
    /// A comment stored with the approval.
    #[arg(long, value_name = "TEXT")]
    pub comments: Option<String>,
}

/// The cooperation limits a grant can lift (payloads.md §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum PolicyName {
    MessageRate,
    ProposalRate,
    DelegationDepth,
    QueuedWorkItems,
    ActiveWorkItems,
}

impl PolicyName {
    fn as_str(self) -> &'static str {
        match self {
            PolicyName::MessageRate => "message_rate",
            PolicyName::ProposalRate => "proposal_rate",
            PolicyName::DelegationDepth => "delegation_depth",
            PolicyName::QueuedWorkItems => "queued_work_items",
            PolicyName::ActiveWorkItems => "active_work_items",
        }
    }
}

#[derive(Debug, Args)]
pub struct ApproveOverrideArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// The Mission whose Group the grant is for.
    #[arg(long, value_name = "ID")]
    pub mission: String,
    /// The Agent (its Agent ID) that alone may use the grant.
    #[arg(long, value_name = "AGENT_ID")]
    pub beneficiary: String,
    /// The cooperation limit lifted.
    #[arg(long, value_enum)]
    pub policy: PolicyName,
    /// The Command kind the grant is for (e.g. `message.post`).
    #[arg(long, value_name = "KIND")]
    pub target_kind: String,
    /// The exact Action ID of the future Command.
    #[arg(long, value_name = "ACTION_ID")]
    pub target_action: String,
    /// Why the limit is lifted.
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    /// How long the grant lasts (it must end by the Mission's deadline).
    #[arg(long, value_name = "SECONDS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    pub expires_in: u64,
}

/// Why a dev tool stopped.
#[derive(Debug)]
pub enum DevError {
    /// The data directory, the server or the request does not fit (no development
    /// Organization, an older layout, another server's Registry, a Mission not awaiting
    /// approval, …): nothing was submitted for it.
    Setup(String),
    /// The server could not be reached, or answered outside the protocol.
    Transport(String),
    /// The authority refused a Command: the §19 error document's code and message.
    Refused { code: ErrorCode, message: String },
}

impl std::fmt::Display for DevError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DevError::Setup(m) | DevError::Transport(m) => f.write_str(m),
            DevError::Refused { code, message } => write!(f, "refused: {code}: {message}"),
        }
    }
}

impl From<String> for DevError {
    fn from(m: String) -> DevError {
        DevError::Setup(m)
    }
}

pub fn run(cmd: DevCommand) -> ExitCode {
    let result = match cmd {
        DevCommand::Principals(a) => principals(&a),
        DevCommand::Approve(ApproveCommand::Mission(a)) => approve_mission(&a),
        DevCommand::Approve(ApproveCommand::Execution(a)) => approve_execution(&a),
        DevCommand::Approve(ApproveCommand::Override(a)) => approve_override(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weave-console dev: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A minimal HTTP/1.1 client (std only): one request per connection, to a development server.

/// A server base URL: `http://host:port[/prefix]`, or `https://…` with the TLS configuration
/// that trusts its certificate.
pub struct Server {
    authority: String,
    prefix: String,
    /// `https://`: the client configuration and the name the certificate must carry.
    tls: Option<(std::sync::Arc<rustls::ClientConfig>, String)>,
}

impl Server {
    /// The server of `--url` (and `--ca` for `https://`).
    pub fn of(a: &ServerArgs) -> Result<Server, DevError> {
        match (a.url.strip_prefix("https://"), &a.ca) {
            (Some(_), Some(ca)) => {
                use rustls::pki_types::pem::PemObject;
                let roots = rustls::pki_types::CertificateDer::pem_file_iter(ca)
                    .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| DevError::Setup(format!("--ca {}: {e}", ca.display())))?;
                let mut store = rustls::RootCertStore::empty();
                for r in roots {
                    store
                        .add(r)
                        .map_err(|e| DevError::Setup(format!("--ca {}: {e}", ca.display())))?;
                }
                let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_protocol_versions(&[&rustls::version::TLS13])
                .map_err(|e| DevError::Setup(format!("TLS: {e}")))?
                .with_root_certificates(store)
                .with_no_client_auth();
                let plain = format!("http://{}", &a.url["https://".len()..]);
                let mut s = Server::parse(&plain)?;
                if s.authority.ends_with(":80") && !a.url.contains(":80") {
                    s.authority = format!("{}:443", &s.authority[..s.authority.len() - 3]);
                }
                let host = s
                    .authority
                    .rsplit_once(':')
                    .map_or(s.authority.as_str(), |(h, _)| h)
                    .trim_matches(['[', ']'])
                    .to_owned();
                s.tls = Some((std::sync::Arc::new(config), host));
                Ok(s)
            }
            (Some(_), None) => Err(DevError::Setup(format!(
                "--url {:?}: an https:// server needs --ca FILE (its certificate, e.g. the \
                 server's DATA/tls/dev-cert.pem)",
                a.url
            ))),
            (None, _) => Server::parse(&a.url),
        }
    }

    pub fn parse(url: &str) -> Result<Server, DevError> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            DevError::Setup(format!(
                "--url {url:?}: http://, or https:// with --ca FILE"
            ))
        })?;
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(DevError::Setup(format!("--url {url:?} names no host")));
        }
        let authority = if authority.contains(':') && !authority.ends_with(']') {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        Ok(Server {
            authority,
            prefix: prefix.to_owned(),
            tls: None,
        })
    }

    /// One request; the status and the body.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<(u16, Vec<u8>), DevError> {
        let t = |e: std::io::Error| DevError::Transport(format!("{}: {e}", self.authority));
        let addr = self
            .authority
            .to_socket_addrs()
            .map_err(t)?
            .next()
            .ok_or_else(|| DevError::Transport(format!("{}: no address", self.authority)))?;
        let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).map_err(t)?;
        tcp.set_read_timeout(Some(Duration::from_secs(120)))
            .map_err(t)?;
        let mut s: Box<dyn ReadWrite> = match &self.tls {
            None => Box::new(tcp),
            Some((config, host)) => {
                let name = rustls::pki_types::ServerName::try_from(host.clone())
                    .map_err(|e| DevError::Setup(format!("{host}: {e}")))?;
                let conn = rustls::ClientConnection::new(std::sync::Arc::clone(config), name)
                    .map_err(|e| DevError::Transport(format!("TLS: {e}")))?;
                Box::new(rustls::StreamOwned::new(conn, tcp))
            }
        };
        let mut head = format!(
            "{method} {}{path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: application/json\r\n",
            self.prefix, self.authority
        );
        if let Some(b) = body {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                b.len()
            ));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes()).map_err(t)?;
        if let Some(b) = body {
            s.write_all(b).map_err(t)?;
        }
        let mut raw = Vec::new();
        if let Err(e) = s.take(64 << 20).read_to_end(&mut raw) {
            // A TLS server may close without close_notify once it has answered.
            if raw.is_empty() || self.tls.is_none() {
                return Err(t(e));
            }
        }
        parse_response(&raw).ok_or_else(|| {
            DevError::Transport(format!(
                "{}: not an HTTP/1.1 response to {method} {path}",
                self.authority
            ))
        })
    }
}

/// A plain or TLS stream.
trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// What the authority answered to an accepted Command.
#[derive(Debug)]
pub struct Accepted {
    /// An exact retry: these are the Events of the first acceptance.
    pub duplicate: bool,
    pub events: Vec<Value>,
}

/// Submits signed Command bytes; an unchanged retry follows `BACKPRESSURE` or a timeout.
pub fn submit(server: &Server, bytes: &[u8]) -> Result<Accepted, DevError> {
    for _ in 0..MAX_RETRIES {
        let (status, body) = server.call("POST", "/api/commands", Some(bytes))?;
        let v = json::parse(&body).map_err(|e| {
            DevError::Transport(format!(
                "POST /api/commands answered {status} with non-JSON: {e}"
            ))
        })?;
        if status == 200 {
            let events = match v.pointer("/events") {
                Some(Value::Array(list)) => list.clone(),
                _ => Vec::new(),
            };
            return Ok(Accepted {
                duplicate: v.pointer("/status").and_then(Value::as_str) == Some("duplicate"),
                events,
            });
        }
        let code = v
            .pointer("/code")
            .and_then(Value::as_str)
            .and_then(ErrorCode::from_wire)
            .ok_or_else(|| {
                DevError::Transport(format!(
                    "POST /api/commands answered {status} without a code"
                ))
            })?;
        if code == ErrorCode::Backpressure {
            let ms = v.pointer("/retryAfterMs").and_then(devorg::json_u64);
            std::thread::sleep(Duration::from_millis(ms.unwrap_or(100).clamp(10, 5000)));
            continue;
        }
        return Err(DevError::Refused {
            code,
            message: v
                .pointer("/message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        });
    }
    Err(DevError::Transport(format!(
        "the server stayed busy through {MAX_RETRIES} retries"
    )))
}

// ---------------------------------------------------------------------------------------------
// dev principals

/// The Agents the principals file names, besides the load Agents.
const FILE_AGENTS: &[&str] = &["coordinator", "worker", "outsider"];

/// The development human that owns the Missions (`humans.owner` of the file).
const OWNER: &str = "mission-owner";

/// Loads the development Organization of `DIR` and checks that the server at `URL` serves
/// it: every key of `organization.json` must be in the server's Registry, so that what this
/// tool signs verifies there (§6.4 stage 4).
fn organization_of(server: &Server, data: &Path) -> Result<DevOrganization, DevError> {
    let org = devorg::load(data)?;
    let (status, body) = server.call("GET", "/api/registry", None)?;
    if status != 200 {
        return Err(DevError::Transport(format!(
            "GET /api/registry answered {status}: is this a weave-console server?"
        )));
    }
    let served = json::parse(&body)
        .map_err(|e| e.to_string())
        .and_then(|v| RegistryEvidence::from_fixture_json(&v).map_err(|e| e.to_string()))
        .map_err(|e| DevError::Transport(format!("GET /api/registry: {e}")))?;
    let same = served.organization_id == org.organization_id
        && org.principals.iter().all(|p| {
            let key = b64url_encode(&p.seed.public_key());
            served
                .bindings
                .iter()
                .any(|b| b.key_id == p.key_id && b.public_key == key)
        });
    if !same {
        return Err(DevError::Setup(format!(
            "the server does not serve the development Organization of {}: pass the --data \
             directory that server was started with (or restart it on this one)",
            data.display()
        )));
    }
    Ok(org)
}

/// Registers `agent`'s Agent Card: the Command the server's bootstrap sent, so normally an
/// exact retry (then `true`).
fn register_card(
    server: &Server,
    org: &DevOrganization,
    agent: &DevPrincipal,
) -> Result<bool, DevError> {
    let bytes = crate::cards::register_command(org, agent)?;
    match submit(server, &bytes) {
        Ok(r) => Ok(r.duplicate),
        Err(DevError::Refused {
            code: ErrorCode::RevisionConflict,
            message,
        }) => Err(DevError::Setup(format!(
            "{} already has an Agent Card this development Organization did not issue \
             ({message}); start the server on a new data directory",
            agent.name
        ))),
        Err(e) => Err(e),
    }
}

/// Creates one ACTIVE root Mission (payloads.md §6.1) owned by the development human, with
/// `coordinator` as its Coordinator; its entry in the principals file.
fn create_mission(server: &Server, org: &DevOrganization, now: Micros) -> Result<Object, DevError> {
    let owner = org.require(OWNER)?;
    let coordinator = org.require("coordinator")?;
    let token = devorg::random_token()?;
    let mission_id = format!("urn:missionweaveprotocol:mission:dev-{token}");
    let group_id = format!("urn:missionweaveprotocol:group:dev-{token}");
    let budget: Object = [
        "financialMicrounits",
        "modelTokens",
        "toolCalls",
        "computeSeconds",
        "wallClockSeconds",
        "externalActions",
    ]
    .into_iter()
    .map(|dim| (dim, Value::from(DEV_BUDGET)))
    .collect();
    let strings = |list: &[&str]| {
        Value::Array(
            list.iter()
                .map(|s| Value::string((*s).to_owned()))
                .collect(),
        )
    };
    let p = Object::from_iter([
        ("missionId", Value::string(mission_id.clone())),
        ("groupId", Value::string(group_id.clone())),
        (
            "coordinatorId",
            Value::string(coordinator.actor.id.0.clone()),
        ),
        (
            "title",
            Value::string(format!("Development Mission {token}")),
        ),
        (
            "objective",
            Value::string("Exercise the protocol with external Agents"),
        ),
        (
            "definitionOfDone",
            strings(&["every WorkItem is verified or cancelled"]),
        ),
        ("budget", Value::Object(budget)),
        (
            "deadline",
            Value::string(
                now.plus_seconds(DEV_DEADLINE_SECONDS)
                    .format_whole_seconds(),
            ),
        ),
        ("permissions", strings(DEV_PERMISSIONS)),
        ("coordinatorLeaseSeconds", Value::from(DEV_LEASE_SECONDS)),
    ]);
    let env = Envelope {
        group_id: Some(group_id.clone()),
        ..Envelope::default()
    };
    let bytes = devorg::signed_command(
        owner,
        "mission.create",
        &format!("urn:missionweaveprotocol:action:dev-mission-create:{token}"),
        &env,
        p,
        now,
    )?;
    let accepted = submit(server, &bytes)?;
    let created = accepted
        .events
        .iter()
        .find(|e| e.pointer("/kind").and_then(Value::as_str) == Some("mission.created"))
        .ok_or_else(|| DevError::Transport("mission.create answered no mission.created".into()))?;
    let get = |ptr: &str| {
        created
            .pointer(ptr)
            .cloned()
            .ok_or_else(|| DevError::Transport(format!("mission.created lacks {ptr}")))
    };
    let status = get("/payload/mission/status")?;
    if status.as_str() != Some("active") {
        return Err(DevError::Transport(format!(
            "the new Mission is {status:?}, not active"
        )));
    }
    Ok(Object::from_iter([
        ("missionId", get("/payload/mission/id")?),
        ("groupId", get("/payload/mission/groupId")?),
        (
            "mainConversationId",
            get("/payload/group/mainConversationId")?,
        ),
        (
            "coordinatorEpoch",
            get("/payload/mission/coordinatorEpoch")?,
        ),
        // mission.create gives the Coordinator an ACTIVE Membership at epoch 1, announced by no
        // Event (payloads.md §6.1).
        ("coordinatorMembershipEpoch", Value::from(1u64)),
        ("deadline", get("/payload/mission/deadline")?),
    ]))
}

/// `{agentId, keyId, privateKey}` of a development Agent.
fn agent_entry(p: &DevPrincipal) -> Object {
    Object::from_iter([
        ("agentId", Value::string(p.actor.id.0.clone())),
        ("keyId", Value::string(p.key_id.clone())),
        ("privateKey", Value::string(p.seed.to_b64url().to_string())),
    ])
}

/// `dev principals --scenarios`: the file `scenarios --url --principals` reads (README, "The
/// behavioural suite over the binding"): `{protocolVersion, organizationId, principals: [{name,
/// type, id, keyId, privateKey, pool?}], tlsCertificate?}`, mode 0600.
fn scenario_principals(a: &PrincipalsArgs) -> Result<(), DevError> {
    let org = devorg::load(&a.server.data)?;
    if org.pool().next().is_none() {
        return Err(DevError::Setup(format!(
            "{} has no scenario pool: start `weave-console serve --dev-clock --data NEW_DIR` on \
             a new data directory",
            a.server.data.display()
        )));
    }
    let list = org
        .principals
        .iter()
        .map(|p| {
            let mut o = Object::new();
            o.insert("name", Value::string(p.name.clone()));
            o.insert("type", Value::string(p.actor.actor_type.as_str()));
            o.insert("id", Value::string(p.actor.id.0.clone()));
            o.insert("keyId", Value::string(p.key_id.clone()));
            o.insert("privateKey", Value::string(p.seed.to_b64url().to_string()));
            if p.pool {
                o.insert("pool", Value::Bool(true));
            }
            Value::Object(o)
        })
        .collect();
    let mut file = Object::new();
    file.insert("protocolVersion", Value::string("0.1"));
    file.insert("organizationId", Value::string(org.organization_id.clone()));
    file.insert("principals", Value::Array(list));
    let cert = a.server.data.join("tls").join("dev-cert.pem");
    if let Ok(pem) = std::fs::read_to_string(&cert) {
        file.insert("tlsCertificate", Value::string(pem));
    }
    let mut text = zeroize::Zeroizing::new(json::to_string(&Value::Object(file)));
    text.push('\n');
    devorg::replace_key_file(&a.out, text.as_bytes())?;
    println!(
        "dev principals: wrote {} (mode 0600): {} Principals, {} in the scenario pool",
        a.out.display(),
        org.principals.len(),
        org.pool().count()
    );
    Ok(())
}

fn principals(a: &PrincipalsArgs) -> Result<(), DevError> {
    if a.scenarios {
        return scenario_principals(a);
    }
    let server = Server::of(&a.server)?;
    let org = organization_of(&server, &a.server.data)?;
    let load: Vec<String> = (1..=usize::from(a.load_agents))
        .map(devorg::load_agent_name)
        .collect();
    let missing: Vec<&str> = FILE_AGENTS
        .iter()
        .copied()
        .chain(load.iter().map(String::as_str))
        .chain([OWNER, "organization-registry", "group-gateway"])
        .filter(|n| org.principal(n).is_none())
        .collect();
    if org.layout < devorg::LAYOUT || !missing.is_empty() {
        return Err(DevError::Setup(format!(
            "{} was created by an older weave-console (organization.json layout {}, lacking {}): \
             stop the server, move the directory aside and start it again to create a new \
             development Organization",
            a.server.data.display(),
            org.layout,
            missing.join(", ")
        )));
    }

    let mut agents = Object::new();
    let mut registered = 0usize;
    let mut retried = 0usize;
    for name in FILE_AGENTS
        .iter()
        .copied()
        .chain(load.iter().map(String::as_str))
    {
        let p = org.require(name)?;
        if register_card(&server, &org, p)? {
            retried += 1;
        } else {
            registered += 1;
        }
        let mut entry = agent_entry(p);
        if FILE_AGENTS.contains(&name) && name != "outsider" {
            entry.insert("agentCardVersion", Value::from(crate::cards::CARD_VERSION));
        }
        agents.insert(name.to_owned(), Value::Object(entry));
    }

    let now = crate::runtime::now();
    let mission = create_mission(&server, &org, now)?;
    let missions = (0..a.missions)
        .map(|_| create_mission(&server, &org, now).map(Value::Object))
        .collect::<Result<Vec<_>, _>>()?;

    let gateway = org.require("group-gateway")?;
    let owner = org.require(OWNER)?;
    let mut authority = Object::new();
    authority.insert("keyId", Value::string(gateway.key_id.clone()));
    authority.insert(
        "publicKey",
        Value::string(b64url_encode(&gateway.seed.public_key())),
    );
    authority.insert("principal", gateway.actor.to_json());
    let mut human = Object::new();
    human.insert("humanId", Value::string(owner.actor.id.0.clone()));
    human.insert("keyId", Value::string(owner.key_id.clone()));
    human.insert(
        "privateKey",
        Value::string(owner.seed.to_b64url().to_string()),
    );
    let mut humans = Object::new();
    humans.insert("owner", Value::Object(human));
    let mut file = Object::new();
    file.insert("protocolVersion", Value::string("0.1"));
    file.insert("authority", Value::Object(authority));
    file.insert("agents", Value::Object(agents));
    file.insert(
        "loadAgents",
        Value::Array(load.iter().map(|n| Value::string(n.clone())).collect()),
    );
    file.insert("humans", Value::Object(humans));
    file.insert("mission", Value::Object(mission));
    file.insert("missions", Value::Array(missions));
    let mut text = zeroize::Zeroizing::new(json::to_string(&Value::Object(file)));
    text.push('\n');
    devorg::replace_key_file(&a.out, text.as_bytes())?;
    println!(
        "dev principals: wrote {} (mode 0600): {} Agents ({registered} registered, {retried} \
         already registered), {} Missions",
        a.out.display(),
        FILE_AGENTS.len() + load.len(),
        1 + usize::from(a.missions)
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// dev approve

/// The authority's state, folded from the server's store with the core's reducer (the same
/// `evolve::apply` the authority replays at start-up, so the projections are its own).
pub fn read_state(data: &Path) -> Result<State, DevError> {
    let path = data.join("authority.sqlite");
    if !path.is_file() {
        return Err(DevError::Setup(format!(
            "{} holds no authority store (authority.sqlite)",
            data.display()
        )));
    }
    let mut state = State::default();
    crate::store::sqlite::SqliteStore::read_events_at(&path, &mut |bytes| {
        let v = json::parse(bytes).map_err(|e| e.to_string())?;
        evolve::apply(&mut state, &v).map_err(|e| e.to_string())
    })
    .map_err(|e| DevError::Setup(e.to_string()))?;
    Ok(state)
}

/// The development human, and its Membership epoch in `group_id` (it must own the Mission).
fn owner_in<'o>(
    org: &'o DevOrganization,
    state: &State,
    mission_id: &str,
) -> Result<(&'o DevPrincipal, String, u64), DevError> {
    let owner = org.require(OWNER)?;
    let mission = state.missions.get(mission_id).ok_or_else(|| {
        DevError::Setup(format!("the server's store has no Mission {mission_id}"))
    })?;
    if mission.owner != owner.actor {
        return Err(DevError::Setup(format!(
            "Mission {mission_id} is owned by {}, not the development human {}",
            mission.owner.id.0, owner.actor.id.0
        )));
    }
    let epoch = state
        .groups
        .get(&mission.group_id)
        .and_then(|g| g.memberships.get(owner.actor.id.0.as_str()))
        .filter(|m| m.status == MembershipState::Active)
        .map(|m| m.epoch)
        .ok_or_else(|| {
            DevError::Setup(format!(
                "the development human has no ACTIVE Membership in {}",
                mission.group_id
            ))
        })?;
    Ok((owner, mission.group_id.clone(), epoch))
}

/// Signs as the development human in `group_id`, submits, and prints what was appended.
fn decide(
    a: &ServerArgs,
    owner: &DevPrincipal,
    kind: &str,
    group_id: String,
    membership_epoch: u64,
    payload: Object,
) -> Result<(), DevError> {
    let server = Server::of(a)?;
    let token = devorg::random_token()?;
    let env = Envelope {
        group_id: Some(group_id),
        membership_epoch: Some(membership_epoch),
        ..Envelope::default()
    };
    let bytes = devorg::signed_command(
        owner,
        kind,
        &format!("urn:missionweaveprotocol:action:dev-approve:{token}"),
        &env,
        payload,
        crate::runtime::now(),
    )?;
    let accepted = submit(&server, &bytes)?;
    for e in &accepted.events {
        println!(
            "dev approve: {} {}",
            e.pointer("/kind").and_then(Value::as_str).unwrap_or("?"),
            e.pointer("/eventId").and_then(Value::as_str).unwrap_or("?")
        );
    }
    Ok(())
}

fn approve_mission(a: &ApproveMissionArgs) -> Result<(), DevError> {
    let org = devorg::load(&a.server.data)?;
    let state = read_state(&a.server.data)?;
    let (owner, group_id, epoch) = owner_in(&org, &state, &a.mission)?;
    let mission = state
        .missions
        .get(&a.mission)
        .ok_or_else(|| DevError::Setup(format!("no Mission {}", a.mission)))?;
    let revision = match (mission.status, mission.submitted_revision) {
        (wasm_core::model::mission::MissionState::AwaitingApproval, Some(r)) => r,
        (status, _) => {
            return Err(DevError::Setup(format!(
                "Mission {} is {status}, not awaiting_approval: there is nothing to decide",
                a.mission
            )));
        }
    };
    let mut p = Object::new();
    p.insert("missionRevision", Value::from(revision));
    let kind = match &a.request_changes {
        Some(feedback) => {
            p.insert("feedback", Value::string(feedback.clone()));
            "mission.request_changes"
        }
        None => {
            p.insert(
                "approvalId",
                Value::string(format!(
                    "urn:missionweaveprotocol:approval:dev-{}",
                    devorg::random_token()?
                )),
            );
            p.insert(
                "artifactHashes",
                Value::Array(
                    mission
                        .submitted_artifact_hashes
                        .iter()
                        .map(|h| Value::string(h.clone()))
                        .collect(),
                ),
            );
            p.insert("acceptancePolicyVersion", Value::string("1.0.0"));
            if let Some(c) = &a.comments {
                p.insert("comments", Value::string(c.clone()));
            }
            "mission.approve"
        }
    };
    decide(&a.server, owner, kind, group_id, epoch, p)
}

fn approve_execution(a: &ApproveExecutionArgs) -> Result<(), DevError> {
    let org = devorg::load(&a.server.data)?;
    let state = read_state(&a.server.data)?;
    let work = state.work_items.get(&a.work_item).ok_or_else(|| {
        DevError::Setup(format!(
            "the server's store has no WorkItem {}",
            a.work_item
        ))
    })?;
    if work.assignee_id.is_none() || work.status != WorkItemState::Queued {
        return Err(DevError::Setup(format!(
            "WorkItem {} is {} {}: an execution gate is granted to the owner of a queued \
             WorkItem (after work.accept_offer)",
            a.work_item,
            work.status,
            if work.assignee_id.is_some() {
                "with an owner"
            } else {
                "without an owner"
            }
        )));
    }
    let (owner, group_id, epoch) = owner_in(&org, &state, &work.mission_id)?;
    let mut p = Object::new();
    p.insert(
        "approvalId",
        Value::string(format!(
            "urn:missionweaveprotocol:approval:dev-execution-{}",
            devorg::random_token()?
        )),
    );
    p.insert("workItemId", Value::string(a.work_item.clone()));
    p.insert("ownershipEpoch", Value::from(work.ownership_epoch));
    let strings = |v: &[String]| Value::Array(v.iter().map(|s| Value::string(s.clone())).collect());
    p.insert("operations", strings(&a.operations));
    p.insert("resources", strings(&a.resources));
    p.insert("expiresInSeconds", Value::from(a.expires_in));
    if let Some(c) = &a.comments {
        p.insert("comments", Value::string(c.clone()));
    }
    decide(
        &a.server,
        owner,
        "approval.grant_execution",
        group_id,
        epoch,
        p,
    )
}

fn approve_override(a: &ApproveOverrideArgs) -> Result<(), DevError> {
    let org = devorg::load(&a.server.data)?;
    let state = read_state(&a.server.data)?;
    let (owner, group_id, epoch) = owner_in(&org, &state, &a.mission)?;
    let mut p = Object::new();
    p.insert(
        "grantId",
        Value::string(format!(
            "urn:missionweaveprotocol:grant:dev-override-{}",
            devorg::random_token()?
        )),
    );
    p.insert("policyName", Value::string(a.policy.as_str()));
    p.insert(
        "beneficiary",
        Actor::new(ActorType::Agent, &a.beneficiary).to_json(),
    );
    p.insert("targetCommandKind", Value::string(a.target_kind.clone()));
    p.insert("targetActionId", Value::string(a.target_action.clone()));
    p.insert("reason", Value::string(a.reason.clone()));
    p.insert(
        "expiresAt",
        Value::string(
            crate::runtime::now()
                .plus_seconds(a.expires_in)
                .format_whole_seconds(),
        ),
    );
    decide(
        &a.server,
        owner,
        "policy.grant_cooperation_override",
        group_id,
        epoch,
        p,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_responses_parse() {
        let s = Server::parse("http://127.0.0.1:8080/").unwrap();
        assert_eq!(
            (s.authority.as_str(), s.prefix.as_str()),
            ("127.0.0.1:8080", "")
        );
        let s = Server::parse("http://localhost/base/").unwrap();
        assert_eq!(
            (s.authority.as_str(), s.prefix.as_str()),
            ("localhost:80", "/base")
        );
        assert!(Server::parse("https://localhost").is_err());
        let args = |url: &str, ca: Option<&str>| ServerArgs {
            url: url.into(),
            ca: ca.map(PathBuf::from),
            data: PathBuf::from("d"),
        };
        let e = Server::of(&args("https://127.0.0.1:8443", None))
            .err()
            .expect("needs --ca");
        assert!(e.to_string().contains("--ca"), "{e}");
        assert!(Server::of(&args("https://127.0.0.1:8443", Some("/nonexistent.pem"))).is_err());
        assert!(Server::parse("http:///x").is_err());

        let plain = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}extra";
        assert_eq!(parse_response(plain), Some((200, b"{}".to_vec())));
        let chunked =
            b"HTTP/1.1 422 X\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4;x=y\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked), Some((422, b"{\"a\":1}".to_vec())));
        assert_eq!(parse_response(b"HTTP/1.1 200 OK\r\n"), None);
        assert_eq!(parse_response(b"garbage\r\n\r\n"), None);
    }
}

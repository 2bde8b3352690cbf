//! `weave-console org …`: an Organization of one's own, from the command line (issue 26).
//! Every subcommand works on the Organization directory (`--data DIR`, the one `serve --data DIR`
//! serves) under its lock (`org::OrgDir::update`); a running server notices each change within a
//! second and serves the new Registry (a rotation or revocation is effective at once).
//!
//! - `org init --name ORG [--require-confirmation]`: the service Principal and its Group
//!   Authority key (`0600`, in a `0700` directory), the Registry evidence, a summary.
//! - `org invite human NAME [--role R] [--expires-in 7d] [--url https://HOST]`: a one-time link
//!   (`URL/join#token=…&name=NAME`; the token in the fragment never reaches a server log).
//! - `org enrolments`, `org confirm NAME|KEY_ID`: keys waiting for an administrator.
//! - `org agent add --public-key KEY --card CARD.json`, `org agent list`: an Agent's Card signed
//!   by the Organization's service key, and its key bound; the private key stays with the
//!   Agent's operator.
//! - `org demo --owner NAME`: the demo's simulated Agents, run by the server
//!   (`agents::cast`).
//! - `org key revoke KEY_ID`, `org key rotate human NAME` (a new invitation whose key replaces
//!   the old one when it is enrolled), `org key rotate agent AGENT_ID --public-key KEY`,
//!   `org key rotate service [--grace 5m]` (the Group Authority's signing key: a new key bound
//!   now, the old one valid through the grace period; a running server switches within a
//!   second, docs/operations.md).

use crate::org::{self, OrgDir, agent_binding, sign_card};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use wasm_core::authority::Micros;
use wasm_core::encoding::b64url_decode;
use wasm_core::json::{self, Object, Value};

#[derive(Debug, Subcommand)]
pub enum OrgCommand {
    /// Create an Organization: its service Principal, Group Authority key and Registry.
    Init(InitArgs),
    /// Invite a human: prints a one-time link that enrols a key made in their browser.
    #[command(subcommand)]
    Invite(InviteCommand),
    /// List the enrolments (pending ones wait for `org confirm`).
    Enrolments(DataArgs),
    /// Confirm a pending enrolment (by the human's name or the key ID).
    Confirm(ConfirmArgs),
    /// Agents: sign and register an Agent Card; list them.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Keys: revoke one, or rotate a human's or an Agent's.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Add the demo's simulated Agents (run by `serve --data`): its two Missions are proposed
    /// to the Organization's humans, who create them and decide their gates in the console.
    Demo(DemoArgs),
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub dir: DataArgs,
    /// The human accountable for the simulated Agents (their cards' `owner`), by name.
    #[arg(long, value_name = "NAME")]
    pub owner: String,
}

#[derive(Debug, Args)]
pub struct DataArgs {
    /// The Organization's directory (the one `serve --data` serves).
    #[arg(long, value_name = "DIR", env = "WEAVE_DATA", default_value = "data")]
    pub data: PathBuf,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    pub dir: DataArgs,
    /// The Organization's name (its ID is made from it: `urn:missionweaveprotocol:organization:<slug>`).
    #[arg(long, value_name = "ORG")]
    pub name: String,
    /// A human's enrolled key waits for `org confirm` before it is bound.
    #[arg(long)]
    pub require_confirmation: bool,
}

#[derive(Debug, Subcommand)]
pub enum InviteCommand {
    /// Invite a human by name.
    Human(InviteArgs),
}

#[derive(Debug, Args)]
pub struct InviteArgs {
    #[command(flatten)]
    pub dir: DataArgs,
    /// The human's name (a-z, 0-9, -): their Principal is `urn:missionweaveprotocol:human:NAME`.
    pub name: String,
    /// What they are invited as (shown in `org enrolments`; authority comes from Missions and
    /// Memberships, §8, not from this).
    #[arg(long)]
    pub role: Option<String>,
    /// How long the link is valid: seconds, or with a unit (`90m`, `12h`, `7d`).
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = parse_duration)]
    pub expires_in: u64,
    /// The console's address as the human will open it.
    #[arg(
        long,
        value_name = "URL",
        env = "WEAVE_PUBLIC_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub url: String,
}

#[derive(Debug, Args)]
pub struct ConfirmArgs {
    #[command(flatten)]
    pub dir: DataArgs,
    /// The human's name or the enrolled key ID.
    pub which: String,
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Sign an Agent Card with the Organization's service key and bind the Agent's key.
    Add(AgentAddArgs),
    /// List the Agents and their keys.
    List(DataArgs),
    /// Print a card to fill in for `org agent add --card`.
    Template(TemplateArgs),
}

#[derive(Debug, Args)]
pub struct TemplateArgs {
    /// The Agent's ID (`urn:missionweaveprotocol:agent:NAME`).
    pub agent_id: String,
}

#[derive(Debug, Args)]
pub struct AgentAddArgs {
    #[command(flatten)]
    pub dir: DataArgs,
    /// The Agent's Ed25519 public key: 32 bytes, base64url (its operator keeps the private one).
    #[arg(long, value_name = "KEY")]
    pub public_key: String,
    /// The card's content (`agent-card.schema.json` without `organizationId`, `publicKeys`,
    /// `issuedAt` and `signature`, which are filled in).
    #[arg(long, value_name = "CARD.json")]
    pub card: PathBuf,
    /// Also write the Agent's join file here: everything its operator needs besides its own
    /// private key (the Agent's IDs, the Group Authority's key, where the Registry is).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// End a key's validity now (`revokedAt`); what it signed before still verifies.
    Revoke(RevokeArgs),
    /// Replace a key.
    #[command(subcommand)]
    Rotate(RotateCommand),
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    #[command(flatten)]
    pub dir: DataArgs,
    /// The key ID to revoke.
    pub key_id: String,
}

#[derive(Debug, Subcommand)]
pub enum RotateCommand {
    /// A new invitation for the human; their current key ends when the new one is enrolled.
    Human(InviteArgs),
    /// Bind the Agent's new public key and end the old one now.
    Agent(RotateAgentArgs),
    /// The Organization's service key (the Group Authority's signing key): a new key bound
    /// now; the old one stays valid through the grace period; the Agent Cards are signed
    /// again. A running server switches to the new key within a second.
    Service(RotateServiceArgs),
}

#[derive(Debug, Args)]
pub struct RotateServiceArgs {
    #[command(flatten)]
    pub dir: DataArgs,
    /// How long the old key stays valid after the new one is bound (`30s`, `5m`, `1h`; at
    /// least 10 s: a running server signs with the old key until it notices, within a second).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub grace: u64,
}

#[derive(Debug, Args)]
pub struct RotateAgentArgs {
    #[command(flatten)]
    pub dir: DataArgs,
    /// The Agent's ID (`urn:missionweaveprotocol:agent:…`).
    pub agent_id: String,
    /// The new Ed25519 public key, 32 bytes base64url.
    #[arg(long, value_name = "KEY")]
    pub public_key: String,
}

/// `90`, `90s`, `15m`, `12h`, `7d` → seconds (1 s ..= 365 d).
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let (num, unit) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&text[..i], c),
        _ => (text, 's'),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{text:?}: a number with s, m, h or d"))?;
    let secs = n.saturating_mul(match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(format!("{text:?}: the unit is s, m, h or d")),
    });
    if !(1..=365 * 86_400).contains(&secs) {
        return Err(format!("{text:?}: between 1 second and 365 days"));
    }
    Ok(secs)
}

pub fn run(cmd: OrgCommand) -> ExitCode {
    match run_inner(cmd, crate::runtime::now()) {
        Ok(text) => {
            // A reader that stops early (`org … | head`) is not a failure of the command.
            use std::io::Write as _;
            let _ = writeln!(std::io::stdout().lock(), "{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("weave-console org: {e}");
            ExitCode::FAILURE
        }
    }
}

fn existing(dir: &DataArgs) -> Result<OrgDir, String> {
    if !OrgDir::exists(&dir.data) {
        return Err(format!(
            "{} holds no Organization: run `weave-console org init --data {} --name ORG` first",
            dir.data.display(),
            dir.data.display()
        ));
    }
    Ok(OrgDir::new(&dir.data))
}

fn strict_key(text: &str) -> Result<(), String> {
    let raw = b64url_decode(text).map_err(|_| "--public-key is not base64url".to_owned())?;
    wasm_core::crypto::ed25519::StrictPublicKey::from_bytes(&raw)
        .map(|_| ())
        .map_err(|e| format!("--public-key is not a strict Ed25519 key: {e}"))
}

fn link(url: &str, token: &str, name: &str) -> String {
    format!(
        "{}/join#token={token}&name={name}",
        url.trim_end_matches('/')
    )
}

/// Runs a subcommand at `now`; the text it prints.
pub fn run_inner(cmd: OrgCommand, now: Micros) -> Result<String, String> {
    match cmd {
        OrgCommand::Init(a) => {
            let made = OrgDir::new(&a.dir.data).init(&a.name, a.require_confirmation, now)?;
            let f = &made.file;
            Ok(format!(
                "Organization {} ({})\n  service Principal    {}\n  Group Authority key  {} (private: {}, mode 0600)\n  \
                 Registry             {} binding(s), in {}\n  enrolments           {}\n\
                 Next: `weave-console org invite human NAME --data {}` for each approver, \
                 `weave-console org agent add …` for each Agent, then `weave-console serve --data {} …`.",
                f.name,
                f.organization_id,
                f.service.id.0,
                f.service_key_id,
                made.key_path.display(),
                f.registry.bindings.len(),
                a.dir.data.join(org::FILE).display(),
                if f.require_confirmation {
                    "wait for `org confirm`"
                } else {
                    "bound when the invitation is used"
                },
                a.dir.data.display(),
                a.dir.data.display(),
            ))
        }
        OrgCommand::Invite(InviteCommand::Human(a)) => {
            let dir = existing(&a.dir)?;
            let (inv, token) = dir.invite(&a.name, a.role.as_deref(), a.expires_in, None, now)?;
            Ok(format!(
                "Invitation {} for {} (until {}), usable once:\n{}",
                inv.id,
                inv.name,
                inv.expires_at.format_whole_seconds(),
                link(&a.url, &token, &inv.name)
            ))
        }
        OrgCommand::Enrolments(a) => {
            let f = existing(&a)?.read()?;
            let mut out = format!("{} enrolment(s)", f.enrolments.len());
            for e in &f.enrolments {
                let role = f
                    .invitations
                    .iter()
                    .find(|i| i.id == e.invitation)
                    .and_then(|i| i.role.clone())
                    .unwrap_or_default();
                out.push_str(&format!(
                    "\n  {}  {}  {}  {}{}",
                    match e.confirmed_at {
                        Some(_) => "bound  ",
                        None => "PENDING",
                    },
                    e.principal_id,
                    e.key_id,
                    e.at.format_whole_seconds(),
                    if role.is_empty() {
                        String::new()
                    } else {
                        format!("  ({role})")
                    }
                ));
            }
            let open = f
                .invitations
                .iter()
                .filter(|i| i.used.is_none() && i.expires_at > now)
                .count();
            out.push_str(&format!("\n{open} invitation(s) not used yet"));
            Ok(out)
        }
        OrgCommand::Confirm(a) => {
            let e = existing(&a.dir)?.confirm(&a.which, now)?;
            Ok(format!("bound {} to {}", e.key_id, e.principal_id))
        }
        OrgCommand::Agent(AgentCommand::Add(a)) => agent_add(&a, now),
        OrgCommand::Demo(a) => crate::agents::cast::add(&existing(&a.dir)?, &a.owner, now),
        OrgCommand::Agent(AgentCommand::Template(a)) => {
            if !wasm_core::id::is_absolute_uri(&a.agent_id) {
                return Err(format!("{:?} is not an absolute URI", a.agent_id));
            }
            Ok(crate::cards::template_json(&a.agent_id))
        }
        OrgCommand::Agent(AgentCommand::List(a)) => {
            let f = existing(&a)?.read()?;
            let mut out = format!("{} Agent Card(s)", f.agent_cards.len());
            for c in &f.agent_cards {
                let id = c.pointer("/agentId").and_then(Value::as_str).unwrap_or("?");
                out.push_str(&format!(
                    "\n  {id}  version {}  key {}",
                    c.pointer("/cardVersion")
                        .and_then(crate::devorg::json_u64)
                        .unwrap_or(0),
                    c.pointer("/publicKeys/0/keyId")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                ));
            }
            Ok(out)
        }
        OrgCommand::Key(KeyCommand::Revoke(a)) => {
            existing(&a.dir)?.update(|f| {
                // The key the server signs with: revoking it would leave Events signed by a
                // revoked key (refused by every verifier, §6.4) and no key to name instead.
                if a.key_id == f.service_key_id {
                    return Err(format!(
                        "{} is the Organization's current service key (the Group Authority's \
                         signing key): rotate it first (`weave-console org key rotate service \
                         --data {}`), then revoke the old one",
                        a.key_id,
                        a.dir.data.display()
                    ));
                }
                f.end_key(&a.key_id, now, true)
            })?;
            Ok(format!(
                "revoked {} at {} (what it signed before still verifies; a running server \
                 refuses it within a second)",
                a.key_id,
                now.format_whole_seconds()
            ))
        }
        OrgCommand::Key(KeyCommand::Rotate(RotateCommand::Human(a))) => {
            let dir = existing(&a.dir)?;
            let principal = format!("urn:missionweaveprotocol:human:{}", a.name);
            let f = dir.read()?;
            let current = f
                .registry
                .bindings
                .iter()
                .rfind(|b| b.principal_id == principal && b.validity_history.is_empty())
                .map(|b| b.key_id.clone())
                .ok_or_else(|| format!("{} has no current key to rotate", a.name))?;
            let (inv, token) = dir.invite(
                &a.name,
                a.role.as_deref(),
                a.expires_in,
                Some(current.clone()),
                now,
            )?;
            Ok(format!(
                "Invitation {} for {} (until {}); {current} stops being valid when the new key \
                 is enrolled:\n{}",
                inv.id,
                inv.name,
                inv.expires_at.format_whole_seconds(),
                link(&a.url, &token, &inv.name)
            ))
        }
        OrgCommand::Key(KeyCommand::Rotate(RotateCommand::Service(a))) => {
            if !OrgDir::exists(&a.dir.data) && a.dir.data.join("organization.json").exists() {
                return Err(format!(
                    "{} holds the development Organization: its service key is in \
                     organization.json beside every development key and is not rotated (make \
                     an Organization with `weave-console org init`)",
                    a.dir.data.display()
                ));
            }
            let r = existing(&a.dir)?.rotate_service(a.grace, now)?;
            Ok(format!(
                "the service key is now {} (valid from {}); {} stays valid until {} and its key \
                 file is kept as {}; {} Agent Cards signed again. A running server signs with \
                 the new key within a second.",
                r.new_key_id,
                now.format_whole_seconds(),
                r.old_key_id,
                r.old_valid_until.format_whole_seconds(),
                org::PREVIOUS_KEY_FILE,
                r.cards
            ))
        }
        OrgCommand::Key(KeyCommand::Rotate(RotateCommand::Agent(a))) => {
            strict_key(&a.public_key)?;
            let dir = existing(&a.dir)?;
            let seed = dir.service_seed(&dir.read()?)?;
            let key_id = dir.update(|f| {
                let i = f
                    .agent_cards
                    .iter()
                    .position(|c| {
                        c.pointer("/agentId").and_then(Value::as_str) == Some(&a.agent_id)
                    })
                    .ok_or_else(|| format!("no Agent Card for {}", a.agent_id))?;
                let old = f.agent_cards[i]
                    .pointer("/publicKeys/0/keyId")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let template = f.agent_cards[i].clone();
                let (card, key_id) = sign_card(f, &template, &a.public_key, &seed, now)?;
                f.registry
                    .bindings
                    .push(agent_binding(&a.agent_id, &key_id, &a.public_key, now));
                if let Some(old) = old {
                    f.end_key(&old, now, false)?;
                }
                f.agent_cards[i] = card;
                Ok(key_id)
            })?;
            Ok(format!(
                "{} now signs with {key_id}; its previous key ended at {}",
                a.agent_id,
                now.format_whole_seconds()
            ))
        }
    }
}

/// The Agent's join file: no private key (its operator holds it), only what it cannot know
/// otherwise. `{protocolVersion, organizationId, agent: {agentId, keyId}, authority: {principal,
/// keyId, publicKey}, paths: {websocket, registry, agentCards}}`.
fn join_file(f: &org::OrgFile, agent_id: &str, key_id: &str) -> Value {
    let authority_key = f
        .registry
        .bindings
        .iter()
        .find(|b| b.key_id == f.service_key_id)
        .map(|b| b.public_key.clone())
        .unwrap_or_default();
    fn o(pairs: Vec<(&'static str, Value)>) -> Value {
        Value::Object(Object::from_iter(pairs))
    }
    o(vec![
        ("protocolVersion", Value::string("0.1")),
        ("organizationId", Value::string(f.organization_id.clone())),
        (
            "agent",
            o(vec![
                ("agentId", Value::string(agent_id.to_owned())),
                ("keyId", Value::string(key_id.to_owned())),
            ]),
        ),
        (
            "authority",
            o(vec![
                (
                    "principal",
                    o(vec![
                        ("type", Value::string("service")),
                        ("id", Value::string(f.service.id.0.clone())),
                    ]),
                ),
                ("keyId", Value::string(f.service_key_id.clone())),
                ("publicKey", Value::string(authority_key)),
            ]),
        ),
        (
            "paths",
            o(vec![
                ("websocket", Value::string("/ws")),
                ("registry", Value::string("/api/registry")),
                ("agentCards", Value::string("/api/registry/agent-cards")),
            ]),
        ),
    ])
}

fn agent_add(a: &AgentAddArgs, now: Micros) -> Result<String, String> {
    strict_key(&a.public_key)?;
    let dir = existing(&a.dir)?;
    let bytes = std::fs::read(&a.card).map_err(|e| format!("{}: {e}", a.card.display()))?;
    let template = json::parse(&bytes).map_err(|e| format!("{}: {e}", a.card.display()))?;
    let seed = dir.service_seed(&dir.read()?)?;
    let (agent_id, key_id) = dir.update(|f| {
        let (card, key_id) = sign_card(f, &template, &a.public_key, &seed, now)?;
        let agent_id = card
            .pointer("/agentId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if f.agent_cards
            .iter()
            .any(|c| c.pointer("/agentId").and_then(Value::as_str) == Some(agent_id.as_str()))
        {
            return Err(format!(
                "{agent_id} has a card already: `org key rotate agent {agent_id} --public-key …` \
                 replaces its key"
            ));
        }
        f.registry
            .bindings
            .push(agent_binding(&agent_id, &key_id, &a.public_key, now));
        f.agent_cards.push(card);
        Ok((agent_id, key_id))
    })?;
    let f = dir.read()?;
    if let Some(out) = &a.out {
        let text = json::to_string(&join_file(&f, &agent_id, &key_id));
        std::fs::write(out, text + "\n").map_err(|e| format!("{}: {e}", out.display()))?;
    }
    Ok(format!(
        "registered {agent_id} with key {key_id}\n  its Group Authority: {} (key {}, public key {})\n  \
         the Registry: GET /api/registry; its card: GET /api/registry/agent-cards",
        f.service.id.0,
        f.service_key_id,
        f.registry
            .bindings
            .iter()
            .find(|b| b.key_id == f.service_key_id)
            .map(|b| b.public_key.clone())
            .unwrap_or_default(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_core::crypto::DocumentKind;
    use wasm_core::encoding::b64url_encode;

    #[test]
    fn durations_parse_with_units_and_bounds() {
        assert_eq!(parse_duration("90"), Ok(90));
        assert_eq!(parse_duration("15m"), Ok(900));
        assert_eq!(parse_duration("12h"), Ok(43_200));
        assert_eq!(parse_duration("7d"), Ok(604_800));
        for bad in ["", "0", "x", "5y", "366d", "-1"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_agent_card_is_signed_by_the_service_and_its_key_bound() {
        let dir = std::env::temp_dir().join(format!("weave-org-cli-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let now = Micros::parse("2026-12-06T06:00:00Z").expect("t");
        let data = DataArgs { data: dir.clone() };
        run_inner(
            OrgCommand::Init(InitArgs {
                dir: DataArgs { data: dir.clone() },
                name: "Acme".into(),
                require_confirmation: false,
            }),
            now,
        )
        .expect("init");
        let agent = wasm_core::crypto::SecretSeed::take(&mut [3u8; 32]);
        let public = b64url_encode(&agent.public_key());
        let card = dir.join("card.json");
        std::fs::write(
            &card,
            crate::cards::template_json("urn:missionweaveprotocol:agent:acme-builder"),
        )
        .expect("card");
        let add = || {
            run_inner(
                OrgCommand::Agent(AgentCommand::Add(AgentAddArgs {
                    dir: DataArgs { data: dir.clone() },
                    public_key: public.clone(),
                    card: card.clone(),
                    out: Some(dir.join("agent.json")),
                })),
                now,
            )
        };
        let out = add().expect("added");
        assert!(
            out.contains("registered urn:missionweaveprotocol:agent:acme-builder"),
            "{out}"
        );
        // The join file: the Agent's IDs and the authority's key, no private key.
        let join =
            json::parse(&std::fs::read(dir.join("agent.json")).expect("join file")).expect("json");
        assert_eq!(
            join.pointer("/agent/agentId").and_then(Value::as_str),
            Some("urn:missionweaveprotocol:agent:acme-builder")
        );
        assert!(
            join.pointer("/authority/publicKey")
                .and_then(Value::as_str)
                .is_some_and(|k| k.len() == 43)
        );
        let text = std::fs::read_to_string(dir.join("agent.json")).expect("text");
        assert!(!text.contains("seed") && !text.contains("privateKey"));
        let f = OrgDir::new(&dir).read().expect("read");
        let registry = f.registry.validate().expect("valid");
        // The card verifies against the Organization's own Registry (§6.4: a service signed).
        wasm_core::crypto::verify(
            json::to_string(&f.agent_cards[0]).as_bytes(),
            DocumentKind::AgentCard,
            &registry,
        )
        .expect("a signed card");
        // Twice: refused; a bad key: refused.
        let again = add();
        assert!(again.is_err());
        assert!(strict_key("AAAA").is_err());
        // Rotation: the new key bound, the old one ended now, card version 2.
        let new = b64url_encode(&wasm_core::crypto::SecretSeed::take(&mut [4u8; 32]).public_key());
        run_inner(
            OrgCommand::Key(KeyCommand::Rotate(RotateCommand::Agent(RotateAgentArgs {
                dir: DataArgs { data: dir.clone() },
                agent_id: "urn:missionweaveprotocol:agent:acme-builder".into(),
                public_key: new,
            }))),
            now.plus_seconds(60),
        )
        .expect("rotated");
        let f = OrgDir::new(&dir).read().expect("read");
        assert_eq!(f.agent_cards.len(), 1);
        assert_eq!(
            f.agent_cards[0]
                .pointer("/cardVersion")
                .and_then(crate::devorg::json_u64),
            Some(2)
        );
        assert_eq!(f.registry.bindings.len(), 3);
        let listed = run_inner(OrgCommand::Agent(AgentCommand::List(data)), now).expect("list");
        assert!(listed.contains("version 2"), "{listed}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

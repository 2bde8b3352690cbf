//! `weave-console export` and `weave-console verify-export` (issue 29, "Auditors"): the audit
//! bundle of some Groups, written from a data directory while its server runs (a read-only
//! connection, one read transaction: WAL readers never block the writer) or from a cluster's
//! PostgreSQL while its nodes run (`--store`: one REPEATABLE READ transaction), and verified
//! offline by `wasm_core::audit::verify`, the code the console runs in the browser.
//! docs/audit.md describes the format and what verification proves.

use crate::store::reader;
use clap::Args;
use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wasm_core::audit::{self, Assembly, Sealer};
use wasm_core::authority::evolve;
use wasm_core::authority::state::State;
use wasm_core::json::{self, Value};

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("selection").required(true).args(["group", "mission"])))]
pub struct ExportArgs {
    /// The server's data directory (its `authority.sqlite` and Organization; with `--store`,
    /// the Organization and Artifact content the cluster's nodes share).
    #[arg(long, value_name = "DIR", env = "WEAVE_DATA", default_value = "data")]
    pub data: PathBuf,
    /// A cluster's PostgreSQL (`postgres://…`, as `serve --store`): read its log instead of
    /// DIR/authority.sqlite.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// Export this Group (and the Groups of its Mission's child Missions).
    #[arg(long, value_name = "ID")]
    pub group: Option<String>,
    /// Export this Mission's Group (and the Groups of its child Missions).
    #[arg(long, value_name = "ID")]
    pub mission: Option<String>,
    /// Where to write the bundle (replaced if it exists).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Include each named Artifact's content stored under DIR, not only its hash.
    #[arg(long)]
    pub with_artifacts: bool,
    /// A deployment's Registry evidence (as `serve --registry`), instead of DIR's Organization.
    #[arg(long, value_name = "FILE", requires = "authority_key")]
    pub registry: Option<PathBuf>,
    /// The Group Authority's key file (as `serve --authority-key`): it seals the bundle.
    #[arg(long, value_name = "FILE", requires = "registry")]
    pub authority_key: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct VerifyExportArgs {
    /// The audit bundle to verify.
    pub file: PathBuf,
}

/// The Organization of the data directory as the server would serve it: a deployment's files,
/// an Organization of `org init`, or the development Organization with its enrolled keys.
fn organization(args: &ExportArgs) -> Result<crate::devorg::OrgSetup, String> {
    let data = &args.data;
    match (&args.registry, &args.authority_key) {
        (Some(r), Some(k)) => crate::devorg::from_deployment(r, k),
        _ if crate::org::OrgDir::exists(data) => crate::org::setup(data),
        _ => {
            let mut setup = crate::devorg::load(data).and_then(crate::cards::setup)?;
            let (token, _) = crate::enrol::DevToken::generate();
            let (registry, enrolment) =
                crate::enrol::Enrolment::development(&setup.registry, data, token)?;
            // Publishing puts the enrolled keys (the browsers' humans) in the served Registry.
            let _ = enrolment.publishing(setup.public.clone());
            setup.registry = registry;
            Ok(setup)
        }
    }
}

/// The selected Groups: the one named (or the Mission's), then its Mission's descendants'.
fn select(state: &State, args: &ExportArgs) -> Result<Vec<String>, String> {
    let root = match (&args.group, &args.mission) {
        (Some(g), _) => {
            if state.group(g).is_none() {
                return Err(format!("no Group {g} in the store"));
            }
            g.clone()
        }
        (None, Some(m)) => state
            .missions
            .get(m)
            .map(|m| m.group_id.clone())
            .ok_or_else(|| format!("no Mission {m} in the store"))?,
        (None, None) => return Err("--group or --mission".into()),
    };
    let mut groups = vec![root.clone()];
    let mut missions: BTreeSet<String> = state
        .mission_of_group(&root)
        .map(|m| m.id.clone())
        .into_iter()
        .collect();
    // Child Missions, to any depth (§14: the ancestry is acyclic; the bound guards a corrupt
    // state).
    for _ in 0..64 {
        let mut grew = false;
        for m in state.missions.values() {
            if m.parent_mission_id
                .as_ref()
                .is_some_and(|p| missions.contains(p))
                && missions.insert(m.id.clone())
            {
                if !groups.contains(&m.group_id) {
                    groups.push(m.group_id.clone());
                }
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    Ok(groups)
}

fn export(args: &ExportArgs) -> Result<String, String> {
    let setup = organization(args)?;
    let organization_id = setup.registry.organization_id().to_owned();
    let registry = json::parse(setup.public.registry_text().as_bytes())
        .map_err(|e| format!("the Registry: {e}"))?;
    let agent_cards = match json::parse(setup.public.agent_cards_text().as_bytes())
        .map_err(|e| format!("the Agent Cards: {e}"))?
        .pointer("/agentCards")
    {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    let mut state = State::default();
    let mut selected: Vec<String> = Vec::new();
    let mut failure = None;
    let mut wanted = |events: &[(Option<String>, Vec<u8>)]| {
        for (i, (_, bytes)) in events.iter().enumerate() {
            let applied = json::parse(bytes)
                .map_err(|e| e.to_string())
                .and_then(|v| evolve::apply(&mut state, &v).map_err(|e| e.to_string()));
            if let Err(e) = applied {
                failure = Some(format!("the store's Event {} does not replay: {e}", i + 1));
                return HashSet::new();
            }
        }
        match select(&state, args) {
            Ok(g) => selected = g,
            Err(e) => {
                failure = Some(e);
                return HashSet::new();
            }
        }
        let mut keys = HashSet::new();
        for (g, bytes) in events {
            if g.as_ref().is_some_and(|g| selected.contains(g))
                && let Ok(v) = json::parse(bytes)
                && let Some(h) = v.pointer("/commandHash").and_then(Value::as_str)
            {
                keys.insert((organization_id.clone(), h.to_owned()));
            }
        }
        keys
    };
    let log = match &args.store {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            crate::cluster::pg::read_for_export(url, &mut wanted)
        }
        Some(other) => {
            return Err(format!(
                "--store {other}: only a PostgreSQL URL (postgres://…) is read"
            ));
        }
        None => reader::read_for_export(&args.data.join("authority.sqlite"), &mut wanted),
    }
    .map_err(|e| e.to_string())?;
    if let Some(f) = failure {
        return Err(f);
    }
    let mut events = Vec::new();
    let mut admissions = Vec::new();
    let mut commands = Vec::new();
    let mut recorded = HashSet::new();
    let mut hashes = BTreeSet::new();
    for (g, bytes) in log.events {
        if !g.as_ref().is_some_and(|g| selected.contains(g)) {
            continue;
        }
        let v = json::parse(&bytes).map_err(|e| e.to_string())?;
        audit::artifact_hashes(&v, &mut hashes);
        if let Some(h) = v.pointer("/commandHash").and_then(Value::as_str) {
            let key = (organization_id.clone(), h.to_owned());
            if let Some(r) = log.admissions.get(&key)
                && recorded.insert(key.clone())
            {
                admissions.push(r.clone());
                commands.extend(log.commands.get(&key).cloned());
            }
        }
        events.push(bytes);
    }
    let store = crate::artifacts::ArtifactStore::open(&args.data);
    let mut missing = 0usize;
    let artifacts: Vec<(String, Option<Vec<u8>>)> = hashes
        .into_iter()
        .map(|h| {
            let content = if args.with_artifacts {
                let c = store.get(&h).ok().map(|s| s.bytes);
                missing += usize::from(c.is_none());
                c
            } else {
                None
            };
            (h, content)
        })
        .collect();
    let groups = selected
        .iter()
        .map(|g| (g.clone(), state.group(g).map_or(0, |s| s.last_sequence)))
        .collect();
    let assembly = Assembly {
        organization_id,
        exported_at: crate::clock::now().format_whole_seconds(),
        groups,
        registry,
        agent_cards,
        events,
        admissions,
        commands,
        artifacts,
    };
    let signer = wasm_core::crypto::ed25519::Signer::from_seed(&setup.config.seed);
    let sealer = Sealer {
        signer: &signer,
        key_id: &setup.config.key_id,
        principal: &setup.config.accepted_by,
    };
    let bytes = audit::assemble(&assembly, Some(&sealer)).map_err(|e| e.to_string())?;
    if bytes.len() > audit::MAX_BUNDLE_BYTES {
        return Err(format!(
            "the bundle would have {} bytes, more than a verifier reads ({}): export fewer \
             Groups{}",
            bytes.len(),
            audit::MAX_BUNDLE_BYTES,
            if args.with_artifacts {
                " or without --with-artifacts"
            } else {
                ""
            }
        ));
    }
    write_file(&args.out, &bytes)?;
    let with_content = assembly.artifacts.iter().filter(|a| a.1.is_some()).count();
    let mut line = format!(
        "export: {} Events of {} Groups, {} First-Admission Records, {} signed Commands, {} \
         Agent Cards, {} Artifacts ({with_content} with content), sealed by {} -> {} ({} bytes)",
        assembly.events.len(),
        assembly.groups.len(),
        assembly.admissions.len(),
        assembly.commands.len(),
        assembly.agent_cards.len(),
        assembly.artifacts.len(),
        setup.config.key_id,
        args.out.display(),
        bytes.len()
    );
    if missing > 0 {
        line.push_str(&format!(
            "; {missing} Artifacts have no content under the data directory (hash only)"
        ));
    }
    Ok(line)
}

/// Writes `bytes` to `path` through a temporary file and a rename (no half-written bundle).
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("tmp-export");
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: {e}", path.display())
        })
}

pub fn run_export(args: &ExportArgs) -> ExitCode {
    match export(args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("weave-console export: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Reads at most [`audit::MAX_BUNDLE_BYTES`] (and one more, to know it is too large).
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(audit::MAX_BUNDLE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(bytes)
}

pub fn run_verify(args: &VerifyExportArgs) -> ExitCode {
    let bytes = match read_bounded(&args.file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("weave-console verify-export: {e}");
            return ExitCode::from(2);
        }
    };
    match audit::verify(&bytes) {
        Ok(summary) => {
            for line in summary.lines() {
                println!("{line}");
            }
            println!("verify-export: OK");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("verify-export: REFUSED: {e}");
            ExitCode::FAILURE
        }
    }
}

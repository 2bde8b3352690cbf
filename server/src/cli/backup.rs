//! `weave-console backup` and `restore` (docs/operations.md, "Backup and restore").
//!
//! A backup is one SQLite file: a copy of the log (`authority.sqlite`) taken with SQLite's
//! online backup API in a single step, so under one read transaction: a consistent cut of the
//! log at one position while the server goes on writing (WAL readers never block the writer).
//! Two tables are added to the copy: `mwp_backup` (the manifest: the position, the number of
//! Events, the projection hash of the State the copy replays to, and the witness: a projection
//! hash the server computed from its own memory at a position inside the copy) and `mwp_backup_files` (the data directory's other files: the
//! Organization's keys and Registry, enrolments, the TLS certificate, Artifacts, the ACK
//! Cursors). It holds private keys: keep it as the data directory is kept.
//!
//! The witness: with a server running on the data directory, `backup` first asks it over the
//! operator's socket (`DATA/operator.sock`, [`crate::ops::serve_local`]) for its projection
//! hash at its last durable position, computed from the State its reducer holds, then copies:
//! the copy covers that position, and replayed to it must give that hash. With no server,
//! the newest snapshot the copy covers (written from the server's memory too) is the witness,
//! and failing that there is none: the manifest says so.
//!
//! Restore checks the copy before anything is put in place: every Event's signature (the six
//! §6.4 stages against the Organization's Registry), every Group's sequences gapless from 1,
//! the projection hash at the witness's position equal to the witness's, and the projection
//! hash of the State the Events replay to equal to the manifest's. It
//! unpacks into a new directory beside the target and renames it into place only once every
//! check passed: a refused or interrupted restore leaves no half-restored directory.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use wasm_core::json::{self, Value};

/// The manifest's format.
const FORMAT: &str = "mwp-backup-1";

/// Events verified together.
const CHUNK: usize = 512;

/// The log's database and the snapshots' one (derived: never copied, rebuilt after a restore).
const LOG: &str = "authority.sqlite";
const SNAPSHOTS: &str = "authority.snapshots.sqlite";
/// The ACK Cursors' database: copied with the backup API too.
const CURSORS: &str = "gateway.sqlite";

#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// The data directory of the server (running or not).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// The backup file to write (refused if it exists).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The deployment's Registry (`serve --registry`), when the data directory holds no
    /// Organization of its own.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The backup file (`weave-console backup --out`).
    #[arg(long, value_name = "FILE")]
    pub from: PathBuf,
    /// The data directory to restore into: must be empty or absent, unless `--force`.
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// Replace a non-empty data directory (once every check passed; the old one is removed).
    #[arg(long)]
    pub force: bool,
    /// The deployment's Registry (`serve --registry`), when the backup holds no Organization.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
}

/// What a backup's manifest says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The log position (row) of the last Event in the copy.
    pub position: i64,
    pub events: u64,
    /// `State::projection_hash` after replaying the copy's Events.
    pub projection: String,
    /// The projection the server held at a position inside the copy, if one was had.
    pub witness: Option<Witness>,
    /// What the copy was checked against, in words (printed, and kept in the manifest).
    pub check: String,
}

/// A projection hash at a log position that did not come from replaying the copy: the running
/// server's State (its reducer's, in memory), or a snapshot it wrote from that State.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    pub position: i64,
    pub projection: String,
    /// Who computed it: [`LIVE`] or [`SNAPSHOT`].
    pub source: String,
}

/// [`Witness::source`] of a running server's answer.
pub const LIVE: &str = "the running server";
/// [`Witness::source`] of the server's snapshot.
pub const SNAPSHOT: &str = "the server's snapshot";

/// How long the running server may take to answer a checkpoint: it makes what it wrote
/// durable, then hashes its whole State (linear in the State; seconds at millions of Events).
const ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

fn e(e: rusqlite::Error) -> String {
    e.to_string()
}

/// The Registry Events are verified against: `registry`, else the data directory's
/// Organization (`org init`'s, else the development one).
fn registry_of(
    dir: &Path,
    registry: Option<&Path>,
) -> Result<wasm_core::crypto::ValidatedRegistry, String> {
    if let Some(file) = registry {
        let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let v = json::parse(&bytes).map_err(|e| format!("{}: {e}", file.display()))?;
        let evidence = wasm_core::crypto::RegistryEvidence::from_registry_json(&v)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        return evidence
            .validate()
            .map_err(|e| format!("{}: the Registry is invalid: {e}", file.display()));
    }
    if crate::org::OrgDir::exists(dir) {
        return crate::org::setup(dir).map(|o| o.registry);
    }
    if dir.join("organization.json").is_file() {
        return crate::devorg::load(dir).map(|o| o.registry);
    }
    Err(format!(
        "{} holds no Organization: pass the deployment's --registry FILE",
        dir.display()
    ))
}

/// Replays the Events of the log at `db` (read-only): their count, the last position and the
/// projection hash; with `registry`, each Event's signature is checked first, and each Group's
/// sequences must run from 1 without a gap. An Event that fails is named.
///
/// With `witness`, the State replayed to the witness's position must have the witness's
/// projection hash, and the copy must hold an Event at that position.
fn check_log(
    db: &Path,
    registry: Option<&wasm_core::crypto::ValidatedRegistry>,
    witness: Option<&Witness>,
) -> Result<(u64, i64, String), String> {
    let compare = |state: &wasm_core::authority::state::State, w: &Witness| {
        let replayed = state.projection_hash();
        if replayed == w.projection {
            Ok(replayed)
        } else {
            Err(format!(
                "the Events replayed to position {} give projection {replayed}; {} held {} \
                 there",
                w.position, w.source, w.projection
            ))
        }
    };
    // The witness's position and hash once checked (a hash is a pass over the whole State:
    // at the copy's end, often the witness's position, it is not computed twice).
    let mut witnessed: Option<(i64, String)> = None;
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(e)?;
    let mut stmt = conn
        .prepare(
            "SELECT position, group_id, sequence, jcs FROM log WHERE kind IS NOT NULL \
             ORDER BY position",
        )
        .map_err(e)?;
    let mut rows = stmt.query([]).map_err(e)?;
    let mut state = wasm_core::authority::state::State::default();
    if let Some(w) = witness.filter(|w| w.position == 0) {
        witnessed = Some((0, compare(&state, w)?));
    }
    let mut next: std::collections::HashMap<String, i64> = Default::default();
    let (mut n, mut last) = (0u64, 0i64);
    // Read and verified in chunks: one batch verification per chunk (§6.4's stages, with the
    // batch's point decompression shared), then checked and applied in log order.
    let mut chunk: Vec<(i64, String, i64, Vec<u8>)> = Vec::with_capacity(CHUNK);
    loop {
        chunk.clear();
        while chunk.len() < CHUNK {
            let Some(row) = rows.next().map_err(e)? else {
                break;
            };
            chunk.push((
                row.get(0).map_err(e)?,
                row.get(1).map_err(e)?,
                row.get(2).map_err(e)?,
                row.get(3).map_err(e)?,
            ));
        }
        if chunk.is_empty() {
            break;
        }
        let verified = registry.map(|r| {
            let docs: Vec<&[u8]> = chunk.iter().map(|c| c.3.as_slice()).collect();
            wasm_core::crypto::verify_batch(&docs, wasm_core::crypto::DocumentKind::Event, r)
        });
        for (i, (position, group, sequence, bytes)) in chunk.iter().enumerate() {
            let v = json::parse(bytes).ok();
            let id = v
                .as_ref()
                .and_then(|v| v.pointer("/eventId"))
                .and_then(Value::as_str)
                .unwrap_or("(unreadable)")
                .to_owned();
            let group_name = if group.is_empty() {
                "the Organization".to_owned()
            } else {
                format!("Group {group}")
            };
            let named =
                |why: String| format!("Event {id} ({group_name}, sequence {sequence}): {why}");
            if let Some(results) = &verified {
                if let Some(Err(err)) = results.get(i) {
                    return Err(named(format!(
                        "fails verification at stage {:?}: {}",
                        err.stage, err.reason
                    )));
                }
                let expected = next.entry(group.clone()).or_insert(1);
                if *sequence != *expected {
                    return Err(named(format!(
                        "the Group's sequence {} was expected",
                        *expected
                    )));
                }
                *expected += 1;
            }
            let v = v.ok_or_else(|| named("not JSON".into()))?;
            wasm_core::authority::evolve::apply(&mut state, &v)
                .map_err(|err| named(format!("does not apply: {err}")))?;
            n += 1;
            last = *position;
            if let Some(w) = witness.filter(|_| witnessed.is_none()) {
                if *position == w.position {
                    witnessed = Some((*position, compare(&state, w)?));
                } else if *position > w.position {
                    return Err(format!(
                        "the copy holds no Event at position {}, where {} held projection {}",
                        w.position, w.source, w.projection
                    ));
                }
            }
        }
    }
    if let Some(w) = witness.filter(|_| witnessed.is_none()) {
        return Err(format!(
            "the copy ends at position {last}, before position {} where {} held projection {}",
            w.position, w.source, w.projection
        ));
    }
    let projection = match witnessed {
        Some((at, hash)) if at == last => hash,
        _ => state.projection_hash(),
    };
    Ok((n, last, projection))
}

/// The server's newest snapshot the copy covers (up to `position`), as a witness: the hash of
/// the State it decodes to, which the server wrote from its memory. `Err` with why there is
/// none.
fn snapshot_witness(data: &Path, position: i64) -> Result<Result<Witness, String>, String> {
    let path = data.join(SNAPSHOTS);
    if !path.is_file() {
        return Ok(Err("no snapshot yet".into()));
    }
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(e)?;
    let row: Option<(i64, Vec<u8>)> = conn
        .query_row(
            "SELECT through, bytes FROM snapshot WHERE through <= ?1 ORDER BY through DESC \
             LIMIT 1",
            params![position],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(e)?;
    let Some((through, bytes)) = row else {
        return Ok(Err(format!(
            "no snapshot covered by the copy (position {position})"
        )));
    };
    let state = wasm_core::authority::snapshot::decode(&bytes)
        .map_err(|err| format!("the server's snapshot through {through} does not decode: {err}"))?;
    Ok(Ok(Witness {
        position: through,
        projection: state.projection_hash(),
        source: SNAPSHOT.into(),
    }))
}

/// Asks the server running on `data`, if any, for its live projection over the operator's
/// socket. `Ok(Err(why))`: no server answers there (none runs, or it predates the socket);
/// `Err`: one answered and could not give it (its store failed, say): the backup is refused.
#[cfg(unix)]
fn ask_server(data: &Path) -> Result<Result<Witness, String>, String> {
    use std::io::{BufRead, Write};
    let path = data.join(crate::ops::OPERATOR_SOCKET);
    let mut stream = match std::os::unix::net::UnixStream::connect(&path) {
        Ok(s) => s,
        Err(err) => {
            return Ok(Err(format!(
                "no server answered on {} ({err})",
                path.display()
            )));
        }
    };
    let io = |err: std::io::Error| format!("{}: {err}", path.display());
    stream.set_read_timeout(Some(ASK_TIMEOUT)).map_err(io)?;
    stream
        .write_all(format!("{}\n", crate::ops::CHECKPOINT_REQUEST).as_bytes())
        .map_err(io)?;
    let mut line = String::new();
    // At most 4 KiB of answer (a checkpoint's is under 200 bytes).
    std::io::BufReader::new(std::io::Read::take(stream, 4096))
        .read_line(&mut line)
        .map_err(io)?;
    let v = json::parse_str(line.trim())
        .map_err(|err| format!("{}: not an answer ({err}): {line:?}", path.display()))?;
    if let Some(why) = v.pointer("/error").and_then(Value::as_str) {
        return Err(format!(
            "the running server could not give its projection: {why}"
        ));
    }
    let position = v
        .pointer("/position")
        .and_then(|v| match v {
            Value::Number(n) => n.as_safe_u64(),
            _ => None,
        })
        .and_then(|p| i64::try_from(p).ok());
    let projection = v.pointer("/projection").and_then(Value::as_str);
    match (position, projection) {
        (Some(position), Some(projection)) => Ok(Ok(Witness {
            position,
            projection: projection.to_owned(),
            source: LIVE.into(),
        })),
        _ => Err(format!("{}: not an answer: {line:?}", path.display())),
    }
}

#[cfg(not(unix))]
fn ask_server(_: &Path) -> Result<Result<Witness, String>, String> {
    Ok(Err("the operator's socket is Unix only".into()))
}

/// The position of the last Event in the log at `db`.
fn last_position(db: &Path) -> Result<i64, String> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(e)?;
    conn.query_row(
        "SELECT coalesce(max(position), 0) FROM log WHERE kind IS NOT NULL",
        [],
        |r| r.get(0),
    )
    .map_err(e)
}

/// Regular files of `dir` (relative paths), but the databases copied otherwise.
fn other_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let entries =
            std::fs::read_dir(dir.join(&rel)).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| e.to_string())?;
            let name = entry.file_name();
            let path = rel.join(&name);
            let kind = entry.file_type().map_err(|e| e.to_string())?;
            if kind.is_dir() {
                todo.push(path);
            } else if kind.is_file() {
                let n = name.to_string_lossy();
                let db = [LOG, SNAPSHOTS, CURSORS]
                    .iter()
                    .any(|d| n == *d || n.starts_with(&format!("{d}-")));
                if !(rel.as_os_str().is_empty() && db) {
                    out.push(path);
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// One consistent copy of the database at `from` into `to` (one step: one read transaction).
fn copy_db(from: &Path, to: &mut Connection) -> Result<(), String> {
    let src = Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(e)?;
    let backup = rusqlite::backup::Backup::new(&src, to).map_err(e)?;
    match backup.step(-1).map_err(e)? {
        rusqlite::backup::StepResult::Done => Ok(()),
        other => Err(format!(
            "the copy of {} did not finish: {other:?}",
            from.display()
        )),
    }
}

#[cfg(unix)]
fn mode_of(m: &std::fs::Metadata) -> i64 {
    use std::os::unix::fs::PermissionsExt;
    i64::from(m.permissions().mode() & 0o777)
}
#[cfg(not(unix))]
fn mode_of(_: &std::fs::Metadata) -> i64 {
    0o600
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: i64) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = u32::try_from(mode & 0o777).unwrap_or(0o600);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("{}: {e}", path.display()))
}
#[cfg(not(unix))]
fn set_mode(_: &Path, _: i64) -> Result<(), String> {
    Ok(())
}

/// Writes the backup of `data` to `out`; returns its manifest.
pub fn backup(data: &Path, out: &Path, registry: Option<&Path>) -> Result<Manifest, String> {
    if out.exists() {
        return Err(format!("{} exists; give a new file", out.display()));
    }
    let log = data.join(LOG);
    if !log.is_file() {
        return Err(format!("{} holds no {LOG}", data.display()));
    }
    // The registry is read first: a backup that could not be checked at restore is refused now.
    registry_of(data, registry)?;
    // The running server's projection before the copy: the copy then covers its position.
    let live = ask_server(data)?;
    let partial = out.with_extension("partial");
    let _ = std::fs::remove_file(&partial);
    let result = (|| {
        let mut dst = Connection::open(&partial).map_err(e)?;
        set_mode(&partial, 0o600)?;
        copy_db(&log, &mut dst)?;
        let (witness, check) = match &live {
            Ok(w) => (
                Some(w.clone()),
                format!(
                    "checked against {LIVE}: projection {} at position {}, from its memory",
                    w.projection, w.position
                ),
            ),
            Err(no_server) => match snapshot_witness(data, last_position(&partial)?)? {
                Ok(w) => {
                    let check = format!(
                        "{no_server}; checked against {SNAPSHOT} through position {}: \
                         projection {}",
                        w.position, w.projection
                    );
                    (Some(w), check)
                }
                Err(no_snapshot) => (
                    None,
                    format!(
                        "{no_server}; {no_snapshot}: the projection is the backup's own, \
                         checked against nothing the server computed"
                    ),
                ),
            },
        };
        // Checked on the copy: its Events, signatures included, and the witness.
        let registry = registry_of(data, registry)?;
        let (events, position, projection) =
            check_log(&partial, Some(&registry), witness.as_ref())?;
        dst.execute_batch(
            "CREATE TABLE mwp_backup (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE mwp_backup_files (path TEXT PRIMARY KEY, mode INTEGER NOT NULL,
                                            bytes BLOB NOT NULL);",
        )
        .map_err(e)?;
        let manifest = Manifest {
            position,
            events,
            projection,
            witness,
            check,
        };
        let mut keys = vec![
            ("format", FORMAT.to_owned()),
            ("position", manifest.position.to_string()),
            ("events", manifest.events.to_string()),
            ("projection", manifest.projection.clone()),
            ("check", manifest.check.clone()),
        ];
        if let Some(w) = &manifest.witness {
            keys.push(("witness_position", w.position.to_string()));
            keys.push(("witness_projection", w.projection.clone()));
            keys.push(("witness_source", w.source.clone()));
        }
        for (k, v) in keys {
            dst.execute(
                "INSERT INTO mwp_backup (key, value) VALUES (?1, ?2)",
                params![k, v],
            )
            .map_err(e)?;
        }
        let cursors = data.join(CURSORS);
        if cursors.is_file() {
            let mut mem = Connection::open_in_memory().map_err(e)?;
            copy_db(&cursors, &mut mem)?;
            let tmp = out.with_extension("cursors.partial");
            let _ = std::fs::remove_file(&tmp);
            mem.execute("VACUUM INTO ?1", params![tmp.to_string_lossy()])
                .map_err(e)?;
            let bytes = std::fs::read(&tmp).map_err(|e| e.to_string());
            let _ = std::fs::remove_file(&tmp);
            dst.execute(
                "INSERT INTO mwp_backup_files (path, mode, bytes) VALUES (?1, ?2, ?3)",
                params![CURSORS, 0o600, bytes?],
            )
            .map_err(e)?;
        }
        for rel in other_files(data)? {
            let path = data.join(&rel);
            let meta = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            dst.execute(
                "INSERT INTO mwp_backup_files (path, mode, bytes) VALUES (?1, ?2, ?3)",
                params![rel.to_string_lossy(), mode_of(&meta), bytes],
            )
            .map_err(e)?;
        }
        dst.execute_batch("PRAGMA journal_mode = DELETE;")
            .map_err(e)?;
        drop(dst);
        std::fs::File::open(&partial)
            .and_then(|f| f.sync_all())
            .map_err(|e| e.to_string())?;
        std::fs::rename(&partial, out).map_err(|e| format!("{}: {e}", out.display()))?;
        Ok(manifest)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}

/// A relative path of a backup's file, refused if it could leave the directory.
fn safe_relative(p: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(p);
    let ok = !p.is_empty()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if ok {
        Ok(path)
    } else {
        Err(format!(
            "the backup names a file outside its directory: {p:?}"
        ))
    }
}

fn read_manifest(conn: &Connection) -> Result<Manifest, String> {
    let get = |k: &str| -> Result<String, String> {
        conn.query_row(
            "SELECT value FROM mwp_backup WHERE key = ?1",
            params![k],
            |r| r.get(0),
        )
        .map_err(|err| format!("not a backup of weave-console (manifest `{k}`: {err})"))
    };
    let optional = |k: &str| -> Result<Option<String>, String> {
        conn.query_row(
            "SELECT value FROM mwp_backup WHERE key = ?1",
            params![k],
            |r| r.get(0),
        )
        .optional()
        .map_err(|err| format!("the manifest's `{k}`: {err}"))
    };
    if get("format")? != FORMAT {
        return Err(format!("not a {FORMAT} backup"));
    }
    let witness = match (
        optional("witness_position")?,
        optional("witness_projection")?,
        optional("witness_source")?,
    ) {
        (None, None, None) => None,
        (Some(position), Some(projection), Some(source)) => Some(Witness {
            position: position
                .parse()
                .map_err(|_| "the manifest's witness position is not a number")?,
            projection,
            source,
        }),
        _ => return Err("the manifest's witness is incomplete".into()),
    };
    Ok(Manifest {
        position: get("position")?
            .parse()
            .map_err(|_| "the manifest's position is not a number")?,
        events: get("events")?
            .parse()
            .map_err(|_| "the manifest's count is not a number")?,
        projection: get("projection")?,
        witness,
        // A backup written before witnesses had `snapshot_check`.
        check: match optional("check")? {
            Some(c) => c,
            None => get("snapshot_check")?,
        },
    })
}

/// Checks the backup at `from` and puts it in place as `data`; returns its manifest.
pub fn restore(
    from: &Path,
    data: &Path,
    force: bool,
    registry: Option<&Path>,
) -> Result<Manifest, String> {
    let occupied = data
        .read_dir()
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    if occupied && !force {
        return Err(format!(
            "{} is not empty: restore into a new directory, or pass --force to replace it",
            data.display()
        ));
    }
    let src = Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|err| format!("{}: {err}", from.display()))?;
    let manifest = read_manifest(&src)?;
    let name = data
        .file_name()
        .ok_or_else(|| format!("{}: not a directory name", data.display()))?
        .to_string_lossy()
        .into_owned();
    let parent = data
        .parent()
        .map(Path::to_path_buf)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    let staging = parent.join(format!(".{name}.restoring-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let result = (|| {
        crate::devorg::private_dir(&staging)?;
        // The files first (the Organization), then the log.
        {
            let mut stmt = src
                .prepare("SELECT path, mode, bytes FROM mwp_backup_files ORDER BY path")
                .map_err(e)?;
            let mut rows = stmt.query([]).map_err(e)?;
            while let Some(row) = rows.next().map_err(e)? {
                let rel: String = row.get(0).map_err(e)?;
                let mode: i64 = row.get(1).map_err(e)?;
                let bytes: Vec<u8> = row.get(2).map_err(e)?;
                let path = staging.join(safe_relative(&rel)?);
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                }
                std::fs::write(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
                set_mode(&path, mode)?;
            }
        }
        let log = staging.join(LOG);
        {
            let mut dst = Connection::open(&log).map_err(e)?;
            set_mode(&log, 0o600)?;
            copy_db(from, &mut dst)?;
            dst.execute_batch(
                "DROP TABLE mwp_backup; DROP TABLE mwp_backup_files; PRAGMA journal_mode = WAL;",
            )
            .map_err(e)?;
        }
        let registry = registry_of(&staging, registry)?;
        let (events, position, projection) =
            check_log(&log, Some(&registry), manifest.witness.as_ref())?;
        if (events, position) != (manifest.events, manifest.position) {
            return Err(format!(
                "the backup holds {events} Events through position {position}; its manifest \
                 says {} through {}",
                manifest.events, manifest.position
            ));
        }
        if projection != manifest.projection {
            return Err(format!(
                "the Events replay to projection {projection}; the manifest recorded {} at \
                 position {}",
                manifest.projection, manifest.position
            ));
        }
        // Every check passed: into place, the old directory (with --force) out of the way first.
        let old = parent.join(format!(".{name}.replaced-{}", std::process::id()));
        if data.exists() {
            std::fs::rename(data, &old).map_err(|e| format!("{}: {e}", data.display()))?;
        }
        if let Err(err) = std::fs::rename(&staging, data) {
            let _ = std::fs::rename(&old, data);
            return Err(format!("{}: {err}", data.display()));
        }
        let _ = std::fs::remove_dir_all(&old);
        Ok(manifest.clone())
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

pub fn run_backup(a: &BackupArgs) -> ExitCode {
    match backup(&a.data, &a.out, a.registry.as_deref()) {
        Ok(m) => {
            println!(
                "weave-console: backup {}: {} Events through position {}, projection {}; {}",
                a.out.display(),
                m.events,
                m.position,
                m.projection,
                m.check
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("weave-console: backup refused: {err}");
            ExitCode::FAILURE
        }
    }
}

pub fn run_restore(a: &RestoreArgs) -> ExitCode {
    match restore(&a.from, &a.data, a.force, a.registry.as_deref()) {
        Ok(m) => {
            let witness = m.witness.as_ref().map_or_else(
                || "no witness recorded".to_owned(),
                |w| {
                    format!(
                        "at position {} projection {} as {} held it",
                        w.position, w.projection, w.source
                    )
                },
            );
            println!(
                "weave-console: restored {} into {}: {} Events verified through position {}, \
                 projection {} as recorded; {witness}",
                a.from.display(),
                a.data.display(),
                m.events,
                m.position,
                m.projection
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("weave-console: restore refused: {err}");
            ExitCode::FAILURE
        }
    }
}

//! `weave-console bench restart`: how long a restart takes at a large history (issue 28, "Fast
//! takeover"): the whole log replayed through the reducer, against the newest snapshot of the
//! State loaded and the Events after it replayed. The history is `bench authority`'s (signed
//! `message.post` Commands in one Group), written through the durable path once and reused
//! when `--dir` already holds it.
//! A benchmark, not a test: it prints figures and asserts nothing about time.

use super::bench_authority::{bench_config, fill_to, open_bench, set_up};
use crate::authority::{replay, restore};
use crate::store::sqlite::{SqliteStore, snapshot_path};
use crate::store::{Store, StoredSnapshot};
use std::process::ExitCode;
use std::time::Instant;
use wasm_core::authority::{Authority, snapshot};

/// `weave-console bench restart`.
#[derive(Debug, clap::Args)]
pub struct RestartArgs {
    /// Events of history before the snapshot.
    #[arg(long, default_value_t = 1_000_000)]
    pub events: u64,
    /// Events appended after the snapshot (the most a restart replays at the default interval).
    #[arg(long, default_value_t = crate::authority::DEFAULT_SNAPSHOT_EVERY)]
    pub after: u64,
    /// Where the history is kept (reused by the next run); a temporary directory, removed at
    /// the end, when absent.
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
}

pub fn run(args: &RestartArgs) -> ExitCode {
    let (dir, temporary) = match &args.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("weave-bench-restart-{}", std::process::id())),
            true,
        ),
    };
    let result = std::fs::create_dir_all(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))
        .and_then(|()| bench(args, &dir));
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench restart: {e}");
            ExitCode::FAILURE
        }
    }
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn bench(args: &RestartArgs, dir: &std::path::Path) -> Result<(), String> {
    let db = dir.join("authority.sqlite");
    let _ = std::fs::remove_file(snapshot_path(&db));
    // 1. The history, through the durable path (kept from an earlier run when it is there).
    let (mut h, start, mut svc) = open_bench(dir)?;
    let mut n = svc.restored.replayed;
    if n == 0 {
        set_up(&mut h, start, &mut svc)?;
    }
    let t = Instant::now();
    let verifier = svc.verifier(crate::authority::available_threads());
    fill_to(
        &mut h,
        start,
        &mut svc,
        Some(&verifier),
        &mut n,
        args.events,
        64,
    )?;
    let before = svc.store().event_count().map_err(|e| e.to_string())?;
    println!(
        "bench restart: SQLite store of {before} Events (message.post in one Group) at {} ({:.1} s to open or fill)",
        db.display(),
        secs(t)
    );
    // 2. The snapshot of that State, as the snapshot thread makes it.
    let state = svc.authority.state.clone();
    let through = svc.store().last_mark();
    let t = Instant::now();
    let bytes = snapshot::encode(&state);
    let encode = secs(t);
    let size = bytes.len();
    let writer = svc.store().snapshot_writer().map_err(|e| e.to_string())?;
    let mut writer = writer.ok_or("the SQLite store keeps no snapshots")?;
    let t = Instant::now();
    writer
        .put_snapshot(&StoredSnapshot {
            through,
            events: before,
            bytes,
        })
        .map_err(|e| e.to_string())?;
    let write = secs(t);
    drop(state);
    println!(
        "  snapshot at {before} Events: encode {encode:.2} s (projection hash included), {:.1} MB, written in {write:.2} s",
        size as f64 / 1e6
    );
    // 3. The Events after it.
    fill_to(
        &mut h,
        start,
        &mut svc,
        Some(&verifier),
        &mut n,
        before + args.after,
        64,
    )?;
    let total = svc.store().event_count().map_err(|e| e.to_string())?;
    let config = bench_config(&h);
    drop(svc);

    // 4. A restart replaying the whole log (the page cache warm for both runs).
    let store = SqliteStore::open(&db).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let mut a = Authority::new(config.duplicate());
    let replayed = replay(&store, &mut a).map_err(|e| e.to_string())?;
    let full = secs(t);
    let t = Instant::now();
    let full_hash = a.state.projection_hash();
    let hash_time = secs(t);
    println!(
        "  full replay: {replayed} Events in {full:.2} s ({:.1} µs each); projection hash {hash_time:.2} s",
        full * 1e6 / replayed.max(1) as f64
    );
    drop(a);

    // 5. A restart from the snapshot: read + decode (digest and projection hash checked), then
    // the Events after it.
    let t = Instant::now();
    let latest = store.latest_snapshot().map_err(|e| e.to_string())?;
    let read = secs(t);
    let latest = latest.ok_or("no snapshot stored")?;
    let t = Instant::now();
    let state = snapshot::decode(&latest.bytes).map_err(|e| e.to_string())?;
    let decode = secs(t);
    drop(state);
    drop(latest);
    let t = Instant::now();
    let mut a = Authority::new(config.duplicate());
    let restored = restore(&store, &mut a).map_err(|e| e.to_string())?;
    let restart = secs(t);
    let hash = a.state.projection_hash();
    if hash != full_hash || restored.refused.is_some() {
        return Err(format!(
            "the restart from the snapshot differs from the full replay ({hash} vs {full_hash}; {:?})",
            restored.refused
        ));
    }
    println!(
        "  from the snapshot: read {read:.2} s, decode {decode:.2} s (digest and projection hash checked); \
         restore (read + decode + {} Events after it) {restart:.2} s: {}",
        restored.replayed,
        restored.summary()
    );
    println!(
        "  restart at {total} Events: {restart:.2} s from the snapshot against {full:.2} s replaying the whole log \
         (plus {hash_time:.2} s for the start-up line's projection hash either way); same projection {hash}"
    );
    Ok(())
}

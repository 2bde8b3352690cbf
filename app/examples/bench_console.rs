//! The console benchmark, natively (`scripts/bench-console.sh` runs it beside the browser page):
//! generates the history (`app::bench::generate`), writes it for the page, and measures the same
//! steps as the page with the same code. A benchmark: it prints figures, asserts nothing on time.
//!
//! Usage: bench_console [--events N] [--work-items N] [--out FILE]

use app::bench;
use std::time::Instant;
use wasm_core::authority::Micros;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let events: usize = arg(&args, "--events")
        .map_or(Ok(100_000), |v| v.parse())
        .map_err(|e| format!("--events: {e}"))?;
    let work_items: usize = arg(&args, "--work-items")
        .map_or(Ok(2_000), |v| v.parse())
        .map_err(|e| format!("--work-items: {e}"))?;

    let t = Instant::now();
    let history = bench::generate(events, work_items)?;
    let lines = bench::to_lines(&history);
    println!(
        "BENCH native generated {} Events ({} bytes) in {:.0} ms",
        history.len(),
        lines.len(),
        t.elapsed().as_secs_f64() * 1e3
    );
    if let Some(out) = arg(&args, "--out") {
        std::fs::write(&out, &lines).map_err(|e| format!("{out}: {e}"))?;
    }
    let all: Vec<&str> = lines.lines().collect();
    let (replayed, last) = all.split_at(all.len().saturating_sub(1));

    let mut r = bench::Replay::new(bench::registry());
    let t = Instant::now();
    for chunk in replayed.chunks(1_000) {
        for line in chunk {
            r.receive(line);
        }
        r.fold(chunk.len());
    }
    let fold_s = t.elapsed().as_secs_f64();
    let now = Micros::from_seconds(1_893_456_000 + 86_400);
    let t = Instant::now();
    let p = bench::project(&r.log, now);
    let project_s = t.elapsed().as_secs_f64();
    println!(
        "BENCH native verified+folded {} Events ({} failed, {} refused) in {:.0} ms: {:.0} /s",
        r.verified,
        r.failed,
        r.log.refusals().len(),
        fold_s * 1e3,
        r.verified as f64 / fold_s
    );
    println!(
        "BENCH native projections {:.0} ms ({:?}); replay total {:.0} ms",
        project_s * 1e3,
        p,
        (fold_s + project_s) * 1e3
    );
    let t = Instant::now();
    let mut live = bench::layout(&r.log, now)?;
    println!(
        "BENCH native DAG layout of {} WorkItems ({} drawn nodes) in {:.1} ms",
        live.dag().nodes.len(),
        live.nodes.len(),
        t.elapsed().as_secs_f64() * 1e3
    );
    let mut update = bench::Replay::new(bench::registry());
    for line in last {
        update.receive(line);
    }
    let event = update
        .log
        .events()
        .first()
        .cloned()
        .ok_or("no last Event")?;
    // The console keeps the state it drew the DAG from (the snapshot published after the
    // previous fold); the update publishes the next one and rebuilds the DAG from the two.
    let t = Instant::now();
    let before = r.log.state().clone();
    let copy_ms = t.elapsed().as_secs_f64() * 1e3;
    // The steps of the live update one by one on a copy (fold, the DAG rebuilt, apply_dag),
    // then the update as the view runs it.
    let (mut log2, mut live2) = (r.log.clone(), live.clone());
    let t = Instant::now();
    log2.push(event.clone());
    log2.fold(1);
    let fold_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let published = log2.state().clone();
    let publish_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let dag = app::routes::mission::next_dag(
        Some((live2.dag(), &before)),
        &published,
        bench::MISSION,
        now,
    )
    .ok_or("no benchmark Mission")?;
    let rebuild_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let full = wasm_core::views::dag::DagView::build(log2.state(), bench::MISSION, now);
    let build_ms = t.elapsed().as_secs_f64() * 1e3;
    if full.as_ref() != Some(&dag) {
        return Err("the rebuilt DAG differs from a full build".into());
    }
    // What the rebuild compares and copies, each alone.
    let (st, m) = (log2.state(), bench::MISSION);
    let t = Instant::now();
    let same_accounts = before.accounts == st.accounts;
    let accounts_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let differ = before
        .work_items
        .values()
        .zip(st.work_items.values())
        .filter(|(a, b)| a != b)
        .count();
    let items_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let copy = live2.dag().clone();
    let clone_ms = t.elapsed().as_secs_f64() * 1e3;
    let items: Vec<_> = st
        .work_items
        .values()
        .filter(|w| w.mission_id == m)
        .collect();
    let t = Instant::now();
    let cp = wasm_core::views::dag::critical_path(&items);
    let cp_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "BENCH native rebuild parts: accounts compared {accounts_ms:.2} ms (same {same_accounts}), WorkItems compared {items_ms:.2} ms ({differ} differ), DagView cloned {clone_ms:.2} ms ({} nodes), critical path {cp_ms:.2} ms ({} WorkItems)",
        copy.nodes.len(),
        cp.work_item_ids.len()
    );
    let t = Instant::now();
    app::routes::mission::apply_dag(&mut live2, dag)?;
    let apply_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let (u, published) = bench::live_update(&mut r.log, &before, &mut live, event, now)?;
    println!(
        "BENCH native live node update (fold + snapshot + DAG + patch) in {:.2} ms; layouts {}, {} nodes changed; steps: fold {fold_ms:.2} ms, snapshot published {publish_ms:.3} ms, DAG rebuilt {rebuild_ms:.2} ms (a full DagView::build {build_ms:.2} ms, same result), apply_dag {apply_ms:.2} ms; a copy of the State before the Event {copy_ms:.3} ms",
        t.elapsed().as_secs_f64() * 1e3,
        u.layouts,
        u.changed.len()
    );
    let start = Instant::now();
    let tr = bench::travel(&r.log, live.dag(), &published, now, || {
        start.elapsed().as_secs_f64() * 1e3
    })?;
    println!("BENCH native {}", tr.line());
    Ok(())
}

//! What the Mission view's tests share (`dag_view`, `dag_detail`): the benchmark's clock, its
//! history folded, and stand-in words for the markup builders.

use app::bench;
use app::routes::mission::Words;
use wasm_core::authority::Micros;
use wasm_core::json::Value;
use wasm_core::views::dag::WhyNotRunning;

/// A day after the benchmark's history starts.
pub const NOW: Micros = Micros((1_893_456_000 + 86_400) * Micros::PER_SECOND);

/// `events` received and folded by the console's own replay; none may fail.
pub fn folded(events: &[Value]) -> bench::Replay {
    let mut r = bench::Replay::new(bench::registry());
    for e in events {
        r.receive(&wasm_core::json::to_string(e));
    }
    r.fold(events.len());
    assert_eq!(r.failed, 0);
    r
}

/// Calls `f` with words that show what was asked (`[state]`, the reason's `Debug` with `<`
/// escaped, `@micros`), so markup tests can find them.
pub fn words<R>(f: impl FnOnce(&Words) -> R) -> R {
    let state = |s: &str| format!("[{s}]");
    let why = |w: &WhyNotRunning| format!("{w:?}").replace('<', "&lt;");
    let when = |at: Micros| format!("@{}", at.0);
    f(&Words {
        state: &state,
        why: &why,
        when: &when,
        running: "running",
        columns: [
            "WorkItem",
            "State",
            "Owner",
            "Ownership Epoch",
            "Execution Lease",
            "Why not running",
        ],
    })
}

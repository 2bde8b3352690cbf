//! The Budget Ledger's account column (`routes::ledger::account_elisions`): each account's id
//! is shown after the prefix its own Mission's accounts share, so a child Mission's accounts
//! (listed under their parent WorkItem) do not cut every row back to the Organization's stem.

use app::routes::ledger::account_elisions;
use wasm_core::views::ledger::{AccountKind, AccountLine};

fn line(id: &str, kind: AccountKind, parent: Option<&str>, depth: usize) -> AccountLine {
    AccountLine {
        account_id: id.into(),
        title: String::new(),
        kind,
        parent: parent.map(str::to_owned),
        depth,
        figures: Vec::new(),
    }
}

const ROOT: &str = "urn:x:demo:checkout:mission";
const CHILD: &str = "urn:x:demo:checkout-security:mission";

/// The demo's Checkout ledger: the Mission, its WorkItems, and under its security WorkItem the
/// child Mission with two WorkItems of its own.
fn checkout() -> Vec<AccountLine> {
    use AccountKind::{Mission, WorkItem};
    vec![
        line(ROOT, Mission, None, 0),
        line(
            "urn:x:demo:checkout:work:requirements",
            WorkItem,
            Some(ROOT),
            1,
        ),
        line("urn:x:demo:checkout:work:security", WorkItem, Some(ROOT), 1),
        line(CHILD, Mission, Some("urn:x:demo:checkout:work:security"), 2),
        line(
            "urn:x:demo:checkout-security:work:threat-model",
            WorkItem,
            Some(CHILD),
            3,
        ),
        line(
            "urn:x:demo:checkout-security:work:dependency-audit",
            WorkItem,
            Some(CHILD),
            3,
        ),
        line(
            "urn:x:demo:checkout:work:implementation",
            WorkItem,
            Some("urn:x:demo:checkout:work:requirements"),
            2,
        ),
    ]
}

fn shown(rows: &[AccountLine]) -> Vec<&str> {
    rows.iter()
        .zip(account_elisions(rows))
        .map(|(a, n)| &a.account_id[n..])
        .collect()
}

#[test]
fn each_account_is_shortened_by_its_own_missions_stem() {
    let rows = checkout();
    assert_eq!(
        shown(&rows),
        vec![
            "mission",
            "work:requirements",
            "work:security",
            "mission",
            "work:threat-model",
            "work:dependency-audit",
            "work:implementation",
        ]
    );
    // The header's prefix is the first row's: the picked Mission's stem.
    assert_eq!(account_elisions(&rows)[0], "urn:x:demo:checkout:".len());
    assert_eq!(
        account_elisions(&rows)[4],
        "urn:x:demo:checkout-security:".len()
    );
}

#[test]
fn without_a_child_mission_every_row_shares_one_prefix_and_an_orphan_counts_with_the_root() {
    let mut rows = checkout();
    rows.retain(|a| !a.account_id.contains("checkout-security"));
    let n = account_elisions(&rows);
    assert!(
        n.iter().all(|k| *k == "urn:x:demo:checkout:".len()),
        "{n:?}"
    );
    // A WorkItem whose parent is not listed is counted with the first row's Mission.
    rows.push(line(
        "urn:x:demo:checkout:work:late",
        AccountKind::WorkItem,
        Some("urn:x:demo:elsewhere:work:gone"),
        1,
    ));
    assert_eq!(
        account_elisions(&rows).last().copied(),
        Some("urn:x:demo:checkout:".len())
    );
    // Nothing listed: nothing to shorten.
    assert!(account_elisions(&[]).is_empty());
    // One account alone keeps its last segment.
    let one = vec![line(ROOT, AccountKind::Mission, None, 0)];
    assert_eq!(shown(&one), vec!["mission"]);
}

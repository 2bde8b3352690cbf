//! A Worker's global Scheduler (§11.1): it picks, from every per-Group queue, the next eligible
//! WorkItem for a free execution slot, and says when a running item should be preempted (§11.3).
//!
//! Weighted fairness is stride scheduling: each Group has a weight and a *pass*, its service so
//! far divided by its weight; the Group with the lowest pass goes next, and running a step
//! charges its Group. Over time every Group gets service in proportion to its weight, whatever
//! the other Groups queue. Urgency and aging are *bounded* bonuses on top of that: an urgent or
//! long-waiting item jumps ahead only while its Group is not more than [`Scheduler::urgent_window`]
//! ahead of the least-served Group, so one Group's flood of urgent work cannot starve another
//! (§11.1: "pure unbounded highest-priority-first scheduling is non-conforming").
//!
//! The Scheduler sees only scheduling metadata (Group, priority, waiting time), never Mission
//! content (§13.3).

use wasm_core::authority::Micros;

/// One pass unit for a Group of weight 1 ([`Scheduler::charge`]).
pub const STRIDE: u64 = 1_000_000;

/// A queued item as the Scheduler sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub group: String,
    pub item: String,
    /// The contract's `requestedPriority` (0–100).
    pub priority: u64,
    /// Since when the item has been ready to run.
    pub ready_since: Micros,
}

/// Per-Group share: its weight and pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Share {
    weight: u64,
    pass: u64,
}

/// The weighted-fair Scheduler of one Worker.
#[derive(Clone, Debug)]
pub struct Scheduler {
    shares: crate::vecmap::VecMap<String, Share>,
    /// `requestedPriority` at or above this is urgent.
    pub urgent_threshold: u64,
    /// A waiting item preempts a running one only when its priority is urgent and at least
    /// this much higher (§11.3: priority changes reorder; preemption is for real urgency).
    pub preempt_margin: u64,
    /// An item waiting this long gets the urgent bonus (aging).
    pub aging: Micros,
    /// How far (in pass units) a Group may be ahead of the least-served Group and still use
    /// the urgent or aging bonus: the bound that keeps the bonus from starving anyone.
    pub urgent_window: u64,
}

impl Default for Scheduler {
    fn default() -> Self {
        Scheduler {
            shares: crate::vecmap::VecMap::new(),
            urgent_threshold: 80,
            preempt_margin: 30,
            aging: Micros::from_seconds(60),
            urgent_window: 4 * STRIDE,
        }
    }
}

impl Scheduler {
    /// Sets a Group's weight (at least 1). A Group new to the Scheduler starts at the lowest
    /// current pass, so it cannot claim service for the time before it joined.
    pub fn set_weight(&mut self, group: &str, weight: u64) {
        let floor = self.min_pass();
        let share = self.shares.or_insert_with(group.to_owned(), || Share {
            weight: 1,
            pass: floor,
        });
        share.weight = weight.max(1);
    }

    pub fn weight(&self, group: &str) -> u64 {
        self.shares.get(group).map_or(1, |s| s.weight)
    }

    fn min_pass(&self) -> u64 {
        self.shares.values().map(|s| s.pass).min().unwrap_or(0)
    }

    fn pass(&self, group: &str) -> u64 {
        self.shares
            .get(group)
            .map_or_else(|| self.min_pass(), |s| s.pass)
    }

    /// Charges `units` of service (e.g. execution steps) to `group`.
    pub fn charge(&mut self, group: &str, units: u64) {
        if !self.shares.contains_key(group) {
            self.set_weight(group, 1);
        }
        if let Some(s) = self.shares.get_mut(group) {
            s.pass = s
                .pass
                .saturating_add(units.saturating_mul(STRIDE) / s.weight);
        }
    }

    /// Whether `c` gets the bounded urgent/aging bonus at `now`.
    fn boosted(&self, c: &Candidate, now: Micros, floor: u64) -> bool {
        let wants = c.priority >= self.urgent_threshold
            || now.0.saturating_sub(c.ready_since.0) >= self.aging.0;
        wants && self.pass(&c.group) <= floor.saturating_add(self.urgent_window)
    }

    /// The index of the candidate to run next: boosted items first, then the lowest pass
    /// (weighted fairness), then higher priority, then the longest waiting, then the id.
    pub fn pick(&self, candidates: &[Candidate], now: Micros) -> Option<usize> {
        let floor = self.min_pass();
        candidates
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| {
                let key = |c: &Candidate| {
                    (
                        !self.boosted(c, now, floor),
                        self.pass(&c.group),
                        std::cmp::Reverse(c.priority),
                        c.ready_since,
                    )
                };
                key(a)
                    .cmp(&key(b))
                    .then_with(|| (&a.group, &a.item).cmp(&(&b.group, &b.item)))
            })
            .map(|(i, _)| i)
    }

    /// Whether a waiting item should preempt `running` (cooperatively, at its next safe
    /// checkpoint, §11.3): an urgent waiting item, `preempt_margin` above the running one, in
    /// a Group that may still use the urgent bonus. Returns that item's index.
    pub fn preempt(&self, running: &Candidate, waiting: &[Candidate]) -> Option<usize> {
        let floor = self.min_pass();
        waiting
            .iter()
            .enumerate()
            .filter(|(_, w)| {
                w.priority >= self.urgent_threshold
                    && w.priority >= running.priority.saturating_add(self.preempt_margin)
                    && self.pass(&w.group) <= floor.saturating_add(self.urgent_window)
            })
            .max_by_key(|(_, w)| w.priority)
            .map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn cand(group: &str, item: &str, priority: u64, ready: i64) -> Candidate {
        Candidate {
            group: group.into(),
            item: item.into(),
            priority,
            ready_since: Micros(ready),
        }
    }

    /// Runs `rounds` picks over always-busy Groups, charging one unit per pick; returns how
    /// often each Group was served.
    fn serve(s: &mut Scheduler, queues: &[(&str, u64)], rounds: usize) -> BTreeMap<String, u32> {
        let mut served = BTreeMap::new();
        for round in 0..rounds {
            let now = Micros(i64::try_from(round).unwrap_or(0));
            let cands: Vec<Candidate> = queues
                .iter()
                .map(|(g, p)| cand(g, &format!("{g}-{round}"), *p, now.0))
                .collect();
            let i = s.pick(&cands, now).expect("a pick");
            *served.entry(cands[i].group.clone()).or_insert(0) += 1;
            s.charge(&cands[i].group, 1);
        }
        served
    }

    #[test]
    fn groups_are_served_in_proportion_to_their_weights() {
        let mut s = Scheduler::default();
        s.set_weight("a", 2);
        s.set_weight("b", 1);
        let served = serve(&mut s, &[("a", 50), ("b", 50)], 300);
        assert_eq!(served["a"], 200, "{served:?}");
        assert_eq!(served["b"], 100, "{served:?}");

        let mut s = Scheduler::default();
        s.set_weight("a", 3);
        s.set_weight("b", 1);
        s.set_weight("c", 1);
        let served = serve(&mut s, &[("a", 50), ("b", 50), ("c", 50)], 500);
        assert_eq!((served["a"], served["b"], served["c"]), (300, 100, 100));
    }

    #[test]
    fn priority_alone_does_not_buy_more_than_the_weighted_share() {
        // Group a only ever queues high (non-urgent) priority work, b low: with equal weights
        // each still gets half.
        let mut s = Scheduler::default();
        s.set_weight("a", 1);
        s.set_weight("b", 1);
        let served = serve(&mut s, &[("a", 79), ("b", 10)], 200);
        assert_eq!((served["a"], served["b"]), (100, 100));
    }

    #[test]
    fn an_urgent_flood_never_starves_another_group() {
        // Group a floods urgent items; b has ordinary work. b is still served, and never waits
        // more than the urgent window's worth of picks in a row.
        let mut s = Scheduler::default();
        s.set_weight("a", 1);
        s.set_weight("b", 1);
        let mut longest_wait = 0;
        let mut wait = 0;
        let mut served_b = 0;
        for round in 0..400 {
            let now = Micros(round);
            let cands = vec![
                cand("a", "urgent", 99, now.0),
                cand("b", "plain", 20, now.0),
            ];
            let i = s.pick(&cands, now).expect("a pick");
            if cands[i].group == "b" {
                served_b += 1;
                wait = 0;
            } else {
                wait += 1;
                longest_wait = longest_wait.max(wait);
            }
            s.charge(&cands[i].group, 1);
        }
        assert!(served_b >= 190, "b was served {served_b} times of 400");
        assert!(longest_wait <= 5, "b waited {longest_wait} picks in a row");
    }

    #[test]
    fn urgent_and_aged_items_jump_ahead_within_the_bound() {
        let mut s = Scheduler::default();
        s.set_weight("a", 1);
        s.set_weight("b", 1);
        s.charge("b", 1); // b has had a little more service: a would go next…
        let now = Micros::from_seconds(1_000);
        let fresh = now;
        let cands = vec![
            cand("a", "x", 50, fresh.0),
            cand("b", "urgent", 95, fresh.0),
        ];
        assert_eq!(
            s.pick(&cands, now),
            Some(1),
            "…but b's urgent item jumps ahead"
        );
        let cands = vec![cand("a", "x", 50, fresh.0), cand("b", "y", 50, fresh.0)];
        assert_eq!(
            s.pick(&cands, now),
            Some(0),
            "plain items follow the passes"
        );
        let old = now.minus_seconds(120);
        let cands = vec![cand("a", "x", 50, fresh.0), cand("b", "aged", 50, old.0)];
        assert_eq!(
            s.pick(&cands, now),
            Some(1),
            "aging lifts a long-waiting item"
        );
        // Beyond the window, the bonus is gone: b is far ahead, so a goes first.
        s.charge("b", 10);
        let cands = vec![
            cand("a", "x", 50, fresh.0),
            cand("b", "urgent", 95, fresh.0),
        ];
        assert_eq!(s.pick(&cands, now), Some(0));
    }

    #[test]
    fn preemption_needs_real_urgency() {
        let mut s = Scheduler::default();
        s.set_weight("a", 2);
        s.set_weight("b", 1);
        let running = cand("b", "review", 40, 0);
        let waiting = vec![cand("a", "later", 60, 0), cand("a", "hotfix", 95, 0)];
        assert_eq!(s.preempt(&running, &waiting), Some(1));
        assert_eq!(s.preempt(&running, &waiting[..1]), None, "60 is not urgent");
        let busy = cand("b", "review", 80, 0);
        assert_eq!(s.preempt(&busy, &waiting), None, "not 30 above 80");
        // A Group far ahead of the others cannot preempt either.
        s.charge("a", 40);
        assert_eq!(s.preempt(&running, &waiting), None);
    }

    #[test]
    fn a_new_group_starts_at_the_current_floor() {
        let mut s = Scheduler::default();
        s.set_weight("a", 1);
        s.charge("a", 50);
        s.set_weight("b", 1);
        // b is not owed 50 units of back service: it alternates with a from here.
        let served = serve(&mut s, &[("a", 50), ("b", 50)], 20);
        assert!(served["a"] >= 9 && served["b"] >= 9, "{served:?}");
    }
}

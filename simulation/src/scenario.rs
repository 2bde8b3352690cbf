//! The behavioural conformance suite's runner. Scenarios are data (JSON files): signed-Command
//! steps by named Principals, each expecting the Events it appends or the exact wire error code.
//! The runner has each step built and signed by a [`Target`], sends it there and checks the
//! outcome; it also records coverage (Command kinds accepted and rejected, Event kinds seen,
//! §7.1/§10.2 rows, error codes). A target knows the scenario's Principals and their keys and
//! takes signed bytes: the in-process authority ([`Harness`], [`run_in_process`]) here; a live
//! server (a WebSocket client with the keys of the server's development Organization) plugs in
//! through [`run`] without changing the runner.
//!
//! ```json
//! {"name": "…", "principals": {"owner": "human", "coord": "agent"}, "agents": ["coord"],
//!  "start": "2026-07-15T08:00:00Z",
//!  "steps": [{"name": "…", "as": "owner", "kind": "mission.create", "after": 0,
//!             "envelope": {"groupId": "urn:x:g"}, "payload": {…},
//!             "expect": {"events": ["mission.created"], "match": {"/0/payload/mission/status": "active"}},
//!             "rows": ["7.1/1"], "save": {"m": "/0/payload/mission/id"}},
//!            {"resend": 0, "expect": {"duplicate": true}},
//!            {"as": "owner", "kind": "mission.approve", …, "expect": {"error": "INVALID_STATE_TRANSITION"}}]}
//! ```
//! Strings may use `${name}` for saved values and `${id:principal}` for Principal ids; a string
//! that is exactly `"${name}"` becomes the saved value with its JSON type (so a saved revision
//! or epoch can fill `expectedRevision` or `ownershipEpoch`).

use crate::harness::{Envelope, Harness};
use std::collections::{BTreeMap, BTreeSet};
use wasm_core::authority::{Micros, Submitted};
use wasm_core::json::{self, Object, Value};
use wasm_core::model::command::CoreCommandKind;
use wasm_core::model::common::ActorType;
use wasm_core::model::error::ErrorCode;
use wasm_core::model::event::CoreEventKind;

/// The transition rows of §7.1 (8) and §10.2 (18), with the Command kinds that exercise them
/// and, for a row whose observable is a refusal, the wire code.
pub const ROWS: &[(&str, &[&str], Option<&str>)] = &[
    ("7.1/1", &["mission.create"], None),
    ("7.1/2", &["mission.create_follow_up"], None),
    ("7.1/3", &["mission.create_child"], None),
    ("7.1/4", &["mission.submit_for_approval"], None),
    ("7.1/5", &["mission.request_changes"], None),
    ("7.1/6", &["mission.approve"], None),
    ("7.1/7", &["mission.cancel"], None),
    ("7.1/8", &["mission.terminate"], None),
    ("10.2/1", &["work.propose"], None),
    ("10.2/2", &["work.authorize"], None),
    ("10.2/3", &["work.offer"], None),
    ("10.2/4", &["work.accept_offer"], None),
    ("10.2/5", &["work.accept_offer"], Some("WORK_OFFER_EXPIRED")),
    ("10.2/6", &["approval.grant_execution"], None),
    ("10.2/7", &["work.start"], None),
    ("10.2/8", &["work.checkpoint"], None),
    ("10.2/9", &["work.block"], None),
    ("10.2/10", &["work.unblock"], None),
    ("10.2/11", &["work.submit"], None),
    ("10.2/12", &["work.accept_result"], None),
    ("10.2/13", &["work.fail"], None),
    ("10.2/14", &["work.cancel"], None),
    ("10.2/15", &["mission.create_child"], None),
    ("10.2/16", &["mission.approve"], None),
    ("10.2/17", &["mission.terminate"], None),
    ("10.2/18", &["mission.cancel", "mission.terminate"], None),
];

/// What a target answered.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    Events(Vec<Value>),
    Duplicate,
    Error { code: String, message: String },
}

/// Where a scenario runs: who its Principals are, how their Commands are signed, and where
/// the signed bytes go.
pub trait Target {
    /// Sends signed Command bytes. `now` is the scenario's clock (the in-process authority
    /// decides at it; a live server decides at its own time).
    fn submit(&mut self, bytes: &[u8], now: Micros) -> Answer;

    /// The wire id of the scenario Principal `name`, if this target can act as it.
    fn principal_id(&self, name: &str) -> Option<String>;

    /// Every Principal name this target can act as (for `${id:name}`).
    fn principal_names(&self) -> Vec<String>;

    /// Builds and signs `name`'s Command, issued at `now`.
    fn command(
        &mut self,
        name: &str,
        kind: &str,
        env: &Envelope,
        payload: Object,
        now: Micros,
    ) -> Vec<u8>;

    /// Makes the named Agents usable (Agent Cards, Sessions) before the steps run.
    fn bootstrap_agents(&mut self, agents: &[&str], now: Micros) -> Result<(), String>;
}

impl Target for Harness {
    fn submit(&mut self, bytes: &[u8], now: Micros) -> Answer {
        match self.submit_bytes(bytes, now) {
            Ok(Submitted::Appended(es)) => {
                Answer::Events(es.into_iter().map(|e| e.value).collect())
            }
            Ok(Submitted::Duplicate(_)) => Answer::Duplicate,
            Err(r) => Answer::Error {
                code: r.code.as_str().to_owned(),
                message: r.message,
            },
        }
    }

    fn principal_id(&self, name: &str) -> Option<String> {
        self.principals.get(name).map(|p| p.actor.id.0.clone())
    }

    fn principal_names(&self) -> Vec<String> {
        self.principals.keys().cloned().collect()
    }

    fn command(
        &mut self,
        name: &str,
        kind: &str,
        env: &Envelope,
        payload: Object,
        now: Micros,
    ) -> Vec<u8> {
        Harness::command(self, name, kind, env, payload, now)
    }

    fn bootstrap_agents(&mut self, agents: &[&str], now: Micros) -> Result<(), String> {
        Harness::bootstrap_agents(self, agents, now).map_err(|r| r.to_string())
    }
}

/// What the scenarios exercised.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    pub accepted: BTreeSet<String>,
    pub rejected: BTreeSet<String>,
    pub events: BTreeSet<String>,
    pub rows: BTreeSet<String>,
    pub codes: BTreeSet<String>,
}

impl Coverage {
    pub fn merge(&mut self, o: &Coverage) {
        self.accepted.extend(o.accepted.iter().cloned());
        self.rejected.extend(o.rejected.iter().cloned());
        self.events.extend(o.events.iter().cloned());
        self.rows.extend(o.rows.iter().cloned());
        self.codes.extend(o.codes.iter().cloned());
    }

    /// `coverage: commands a/32, events b/36, transitions c/26, error-codes k/27`: a core
    /// Command kind counts once it was both accepted and rejected.
    pub fn line(&self) -> String {
        let commands = CoreCommandKind::ALL
            .iter()
            .filter(|k| self.accepted.contains(k.as_str()) && self.rejected.contains(k.as_str()))
            .count();
        let events = CoreEventKind::ALL
            .iter()
            .filter(|k| self.events.contains(k.as_str()))
            .count();
        let rows = ROWS
            .iter()
            .filter(|(r, _, _)| self.rows.contains(*r))
            .count();
        let codes = ErrorCode::ALL
            .iter()
            .filter(|c| self.codes.contains(c.as_str()))
            .count();
        format!(
            "coverage: commands {commands}/{}, events {events}/{}, transitions {rows}/{}, error-codes {codes}/{}",
            CoreCommandKind::ALL.len(),
            CoreEventKind::ALL.len(),
            ROWS.len(),
            ErrorCode::ALL.len()
        )
    }

    /// The core kinds and rows not yet covered, for the report.
    pub fn missing(&self) -> Vec<String> {
        let mut out = Vec::new();
        for k in CoreCommandKind::ALL {
            let k = k.as_str();
            if !self.accepted.contains(k) {
                out.push(format!("{k} (never accepted)"));
            }
            if !self.rejected.contains(k) {
                out.push(format!("{k} (never rejected)"));
            }
        }
        for k in CoreEventKind::ALL {
            if !self.events.contains(k.as_str()) {
                out.push(format!("event {}", k.as_str()));
            }
        }
        for (r, _, _) in ROWS {
            if !self.rows.contains(*r) {
                out.push(format!("row {r}"));
            }
        }
        out
    }
}

/// The outcome of one scenario.
#[derive(Clone, Debug, Default)]
pub struct ScenarioReport {
    pub name: String,
    pub steps: usize,
    /// Steps with at least one failed expectation.
    pub failed_steps: BTreeSet<usize>,
    pub failures: Vec<String>,
    pub coverage: Coverage,
}

impl ScenarioReport {
    pub fn passed_steps(&self) -> usize {
        self.steps.saturating_sub(self.failed_steps.len())
    }
}

fn s<'a>(v: &'a Value, p: &str) -> Option<&'a str> {
    v.pointer(p).and_then(Value::as_str)
}

fn substitute(v: &Value, vars: &BTreeMap<String, Value>) -> Value {
    match v {
        Value::String(js) => {
            let text = js.as_str();
            if !text.contains("${") {
                return v.clone();
            }
            // A whole-value reference keeps the saved value's JSON type (numbers stay numbers).
            if let Some(name) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}'))
                && !name.contains("${")
                && let Some(saved) = vars.get(name)
            {
                return saved.clone();
            }
            let mut out = String::new();
            let mut rest = text;
            while let Some(i) = rest.find("${") {
                out.push_str(&rest[..i]);
                let after = &rest[i + 2..];
                match after.find('}') {
                    Some(j) => {
                        let name = &after[..j];
                        match vars.get(name) {
                            Some(Value::String(val)) => out.push_str(val.as_str()),
                            Some(val) => out.push_str(&json::to_string(val)),
                            None => {
                                out.push_str("${");
                                out.push_str(name);
                                out.push('}');
                            }
                        }
                        rest = &after[j + 1..];
                    }
                    None => {
                        out.push_str(&rest[i..]);
                        rest = "";
                    }
                }
            }
            out.push_str(rest);
            Value::string(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, vars)).collect()),
        Value::Object(o) => {
            let mut n = Object::new();
            for (k, x) in o.iter() {
                n.insert(k.clone(), substitute(x, vars));
            }
            Value::Object(n)
        }
        other => other.clone(),
    }
}

fn envelope(v: Option<&Value>) -> Envelope {
    let Some(v) = v else {
        return Envelope::default();
    };
    let u = |p: &str| match v.pointer(p) {
        Some(Value::Number(n)) => n.as_safe_u64(),
        _ => None,
    };
    let st = |p: &str| s(v, p).map(str::to_owned);
    Envelope {
        group_id: st("/groupId"),
        session_epoch: u("/sessionEpoch"),
        membership_epoch: u("/membershipEpoch"),
        coordinator_epoch: u("/coordinatorEpoch"),
        expected_revision: u("/expectedRevision"),
        work_item_id: st("/workItemId"),
        conversation_id: st("/conversationId"),
        cooperation_override_grant_id: st("/cooperationOverrideGrantId"),
        action_id: st("/actionId"),
        extensions: v.pointer("/extensions").cloned(),
    }
}

/// Parses and runs one scenario against the in-process authority.
pub fn run_in_process(text: &[u8]) -> ScenarioReport {
    run(text, |principals| Ok(Harness::new(principals)))
}

/// Parses one scenario, opens its target with the scenario's Principals (name and type), and
/// runs the steps there.
pub fn run<T: Target>(
    text: &[u8],
    open: impl FnOnce(&[(&str, ActorType)]) -> Result<T, String>,
) -> ScenarioReport {
    let mut report = ScenarioReport::default();
    let sc = match json::parse(text) {
        Ok(v) => v,
        Err(e) => {
            report.failures.push(format!("scenario file: {e}"));
            return report;
        }
    };
    report.name = s(&sc, "/name").unwrap_or("(unnamed)").to_owned();
    let mut principals = Vec::new();
    if let Some(Value::Object(p)) = sc.pointer("/principals") {
        for (name, t) in p.iter() {
            let t = match t.as_str() {
                Some("human") => ActorType::Human,
                Some("service") => ActorType::Service,
                _ => ActorType::Agent,
            };
            principals.push((name.as_str().to_owned(), t));
        }
    }
    let refs: Vec<(&str, ActorType)> = principals.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    let mut target = match open(&refs) {
        Ok(t) => t,
        Err(e) => {
            report.failures.push(format!("target: {e}"));
            return report;
        }
    };
    let Some(start) = s(&sc, "/start").and_then(Micros::parse) else {
        report
            .failures
            .push("scenario needs a start timestamp".into());
        return report;
    };
    let agents: Vec<String> = match sc.pointer("/agents") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let agent_refs: Vec<&str> = agents.iter().map(String::as_str).collect();
    if let Err(e) = target.bootstrap_agents(&agent_refs, start) {
        report.failures.push(format!("bootstrap: {e}"));
        return report;
    }
    let mut vars: BTreeMap<String, Value> = BTreeMap::new();
    for name in target.principal_names() {
        if let Some(id) = target.principal_id(&name) {
            vars.insert(format!("id:{name}"), Value::string(id));
        }
    }
    run_steps(&sc, &mut target, start, &mut vars, &mut report);
    report
}

fn run_steps<T: Target>(
    sc: &Value,
    target: &mut T,
    start: Micros,
    vars: &mut BTreeMap<String, Value>,
    report: &mut ScenarioReport,
) {
    let Some(Value::Array(steps)) = sc.pointer("/steps") else {
        report.failures.push("scenario has no steps".into());
        return;
    };
    let mut sent: Vec<(Vec<u8>, Micros)> = Vec::new();
    for (i, raw) in steps.iter().enumerate() {
        report.steps += 1;
        let step = substitute(raw, vars);
        let label = format!(
            "step {i} ({})",
            s(&step, "/name").or(s(&step, "/kind")).unwrap_or("resend")
        );
        let now = match step.pointer("/after") {
            Some(Value::Number(n)) => start.plus_seconds(n.as_safe_u64().unwrap_or(0)),
            _ => sent.last().map_or(start, |(_, t)| *t),
        };
        let (bytes, now, kind) = if let Some(Value::Number(n)) = step.pointer("/resend") {
            let idx = n.as_safe_u64().unwrap_or(0) as usize;
            match sent.get(idx) {
                Some((b, t)) => {
                    let kind = json::parse(b)
                        .ok()
                        .and_then(|v| s(&v, "/kind").map(str::to_owned))
                        .unwrap_or_default();
                    (b.clone(), *t, kind)
                }
                None => {
                    report
                        .failures
                        .push(format!("{label}: resend of unknown step {idx}"));
                    sent.push((Vec::new(), now));
                    continue;
                }
            }
        } else {
            let who = s(&step, "/as").unwrap_or_default().to_owned();
            let kind = s(&step, "/kind").unwrap_or_default().to_owned();
            if target.principal_id(&who).is_none() {
                report
                    .failures
                    .push(format!("{label}: unknown principal {who:?}"));
                sent.push((Vec::new(), now));
                continue;
            }
            let payload = step
                .pointer("/payload")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let env = envelope(step.pointer("/envelope"));
            let bytes = Target::command(target, &who, &kind, &env, payload, now);
            (bytes, now, kind)
        };
        sent.push((bytes.clone(), now));
        let answer = Target::submit(target, &bytes, now);
        let before = report.failures.len();
        check(&label, &kind, &step, &answer, vars, report);
        if report.failures.len() > before {
            report.failed_steps.insert(i);
        }
    }
}

fn check(
    label: &str,
    kind: &str,
    step: &Value,
    answer: &Answer,
    vars: &mut BTreeMap<String, Value>,
    report: &mut ScenarioReport,
) {
    let expect = step.pointer("/expect");
    let want_error = expect.and_then(|e| s(e, "/error"));
    let want_dup = matches!(
        expect.and_then(|e| e.pointer("/duplicate")),
        Some(Value::Bool(true))
    );
    let cov = &mut report.coverage;
    let mut ok = true;
    match (answer, want_error, want_dup) {
        (Answer::Error { code, message }, Some(w), _) => {
            if code != w {
                ok = false;
                report
                    .failures
                    .push(format!("{label}: expected {w}, got {code} ({message})"));
            } else {
                cov.rejected.insert(kind.to_owned());
                cov.codes.insert(code.clone());
            }
        }
        (Answer::Error { code, message }, None, _) => {
            ok = false;
            report
                .failures
                .push(format!("{label}: rejected with {code}: {message}"));
        }
        (Answer::Duplicate, _, true) => {}
        (Answer::Duplicate, _, false) => {
            ok = false;
            report
                .failures
                .push(format!("{label}: unexpected duplicate"));
        }
        (Answer::Events(_), Some(w), _) => {
            ok = false;
            report
                .failures
                .push(format!("{label}: expected {w}, but it was accepted"));
        }
        (Answer::Events(_), None, true) => {
            ok = false;
            report.failures.push(format!(
                "{label}: expected a duplicate, but Events were appended"
            ));
        }
        (Answer::Events(events), None, false) => {
            cov.accepted.insert(kind.to_owned());
            for e in events {
                if let Some(k) = s(e, "/kind") {
                    cov.events.insert(k.to_owned());
                }
            }
            let got: Vec<&str> = events.iter().filter_map(|e| s(e, "/kind")).collect();
            if let Some(Value::Array(want)) = expect.and_then(|e| e.pointer("/events")) {
                let want: Vec<&str> = want.iter().filter_map(Value::as_str).collect();
                if want != got {
                    ok = false;
                    report
                        .failures
                        .push(format!("{label}: expected Events {want:?}, got {got:?}"));
                }
            }
            let arr = Value::Array(events.clone());
            if let Some(Value::Object(m)) = expect.and_then(|e| e.pointer("/match")) {
                for (ptr, want) in m.iter() {
                    let got = arr.pointer(ptr.as_str());
                    // JSON equality: member order and number spelling do not matter.
                    if !got.is_some_and(|g| wasm_core::model::json_equal(g, want)) {
                        ok = false;
                        report.failures.push(format!(
                            "{label}: {} is {}, expected {}",
                            ptr.as_str(),
                            got.map_or("absent".into(), json::to_string),
                            json::to_string(want)
                        ));
                    }
                }
            }
            if let Some(Value::Object(save)) = step.pointer("/save") {
                for (name, ptr) in save.iter() {
                    match ptr.as_str().and_then(|p| arr.pointer(p)) {
                        Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => {
                            vars.insert(name.as_str().to_owned(), v.clone());
                        }
                        _ => {
                            ok = false;
                            report.failures.push(format!(
                                "{label}: nothing to save at {}",
                                json::to_string(ptr)
                            ));
                        }
                    }
                }
            }
        }
    }
    if let Some(Value::Array(rows)) = step.pointer("/rows") {
        for r in rows.iter().filter_map(Value::as_str) {
            match ROWS.iter().find(|(id, _, _)| *id == r) {
                None => report.failures.push(format!("{label}: unknown row {r}")),
                Some((id, kinds, code)) => {
                    let outcome_fits = match code {
                        None => matches!(answer, Answer::Events(_)),
                        Some(c) => matches!(answer, Answer::Error { code: got, .. } if got == c),
                    };
                    if !kinds.contains(&kind) {
                        report
                            .failures
                            .push(format!("{label}: row {id} is not exercised by {kind}"));
                    } else if ok && outcome_fits {
                        report.coverage.rows.insert((*id).to_owned());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_value_references_keep_their_type() {
        let mut vars = BTreeMap::new();
        vars.insert(
            "rev".to_owned(),
            json::parse_str("3").unwrap_or(Value::Null),
        );
        vars.insert("id".to_owned(), Value::string("urn:x:1"));
        let v = json::parse_str(
            r#"{"expectedRevision":"${rev}","text":"item ${id} at ${rev}","keep":"${none}"}"#,
        )
        .unwrap_or(Value::Null);
        let out = substitute(&v, &vars);
        assert_eq!(
            json::to_string(&out),
            r#"{"expectedRevision":3,"text":"item urn:x:1 at 3","keep":"${none}"}"#
        );
    }
}

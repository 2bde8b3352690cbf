//! `weave-console dev principals` against a running development server: the file's exact
//! shape and mode, its keys in the served Registry, the Missions ACTIVE (a Command only an
//! ACTIVE Mission accepts goes through, signed with the file's keys alone), the outsider in no
//! Group, the worker's card, a second run, and the refusals. Then `dev approve`: a decision
//! the state does not allow is refused before anything is sent, and a Cooperation Override
//! granted by the development human is accepted.

#![allow(clippy::unwrap_used)]

use serde_json::Value as J;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};
use wasm_core::authority::{State, evolve};
use wasm_core::crypto::registry::RegistryEvidence;
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document};
use wasm_core::encoding::{b64url_decode, b64url_encode};
use wasm_core::json::{self, Object, Value};

mod support;
use support::{BIN, Server, dev};

fn temp(name: &str) -> PathBuf {
    support::temp("devp", name)
}

fn serve(data: &Path) -> Server {
    serve_with(data, &[])
}

/// `serve` with more flags (`--tls`: the address is then the `https://` one).
fn serve_with(data: &Path, extra: &[&str]) -> Server {
    support::serve(|c| {
        c.args(["--addr", "127.0.0.1:0", "--data"])
            .arg(data)
            .args(extra);
    })
}

fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    (
        status,
        text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned(),
    )
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A Command signed with a key of the principals file (or of organization.json).
#[allow(clippy::too_many_arguments)]
fn command(
    actor: (&str, &str),
    key_id: &str,
    private_key: &str,
    kind: &str,
    action: &str,
    envelope: &[(&'static str, Value)],
    payload: Value,
) -> Vec<u8> {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("actionId", Value::string(action.to_owned()));
    let mut a = Object::new();
    a.insert("type", Value::string(actor.0.to_owned()));
    a.insert("id", Value::string(actor.1.to_owned()));
    o.insert("actor", Value::Object(a));
    for (k, v) in envelope {
        o.insert(*k, v.clone());
    }
    o.insert("kind", Value::string(kind.to_owned()));
    o.insert("correlationId", Value::string(action.to_owned()));
    o.insert(
        "issuedAt",
        Value::string(wasm_core::time::format_utc(now_secs() - 1)),
    );
    o.insert("payload", payload);
    let mut doc = Value::Object(o);
    let seed = SecretSeed::from_b64url(private_key).unwrap();
    sign_document(&mut doc, DocumentKind::Command, key_id, &seed).unwrap();
    json::to_string(&doc).into_bytes()
}

fn jv(text: &str) -> Value {
    json::parse_str(text).unwrap()
}

fn keys(v: &J) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

fn s<'a>(v: &'a J, ptr: &str) -> &'a str {
    v.pointer(ptr)
        .and_then(J::as_str)
        .unwrap_or_else(|| panic!("{ptr} is not a string in {v}"))
}

/// A 32-byte key in base64url without padding.
fn is_key(text: &str) -> bool {
    !text.contains('=') && b64url_decode(text).is_ok_and(|b| b.len() == 32)
}

/// The authority's state, folded from the server's store with the core's own reducer.
fn state_of(data: &Path) -> State {
    let conn = rusqlite::Connection::open_with_flags(
        data.join("authority.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let mut stmt = conn
        .prepare("SELECT jcs FROM log WHERE kind IS NOT NULL ORDER BY position")
        .unwrap();
    let mut rows = stmt.query([]).unwrap();
    let mut state = State::default();
    while let Some(row) = rows.next().unwrap() {
        let bytes: Vec<u8> = row.get(0).unwrap();
        evolve::apply(&mut state, &json::parse(&bytes).unwrap()).unwrap();
    }
    state
}

fn check_mission(m: &J, state: &State, coordinator: &str, owner: &str) {
    assert_eq!(
        keys(m),
        [
            "coordinatorEpoch",
            "coordinatorMembershipEpoch",
            "deadline",
            "groupId",
            "mainConversationId",
            "missionId"
        ]
    );
    let (id, group) = (s(m, "/missionId"), s(m, "/groupId"));
    assert_eq!(s(m, "/mainConversationId"), format!("{group}:mission"));
    assert_eq!(m["coordinatorEpoch"], 1);
    assert_eq!(m["coordinatorMembershipEpoch"], 1);
    let mission = &state.missions[id];
    assert_eq!(
        mission.status,
        wasm_core::model::mission::MissionState::Active
    );
    assert_eq!(mission.group_id, group);
    assert_eq!(mission.owner.id.0, owner);
    assert_eq!(mission.coordinator_id, coordinator);
    assert_eq!(mission.coordinator_epoch, 1);
    // Deadline weeks away, a Coordinator lease of a year.
    let deadline = wasm_core::authority::Micros::parse(s(m, "/deadline")).unwrap();
    assert_eq!(deadline, mission.deadline);
    let now = wasm_core::authority::Micros::from_seconds(now_secs());
    assert!(deadline > now.plus_seconds(14 * 86_400));
    let lease = mission.coordinator_lease_expires_at.unwrap();
    assert!(lease > now.plus_seconds(360 * 86_400));
    // A large budget in all six dimensions, none null.
    let budget = mission.budget.to_json_value();
    for dim in [
        "financialMicrounits",
        "modelTokens",
        "toolCalls",
        "computeSeconds",
        "wallClockSeconds",
        "externalActions",
    ] {
        let n = budget[dim]
            .as_u64()
            .unwrap_or_else(|| panic!("{dim}: {budget}"));
        assert!(n >= 1_000_000_000, "{dim}: {n}");
    }
    let c = &state.groups[group].memberships[coordinator];
    assert_eq!((c.status.as_str(), c.epoch), ("active", 1));
    assert!(c.roles.iter().any(|r| r == "coordinator"));
}

/// What a ResourceBudget projection serializes to, as serde JSON.
trait ToJsonValue {
    fn to_json_value(&self) -> J;
}

impl<T: wasm_core::model::ToJson> ToJsonValue for T {
    fn to_json_value(&self) -> J {
        serde_json::from_str(&json::to_string(&self.to_json())).unwrap()
    }
}

#[test]
fn dev_principals_gives_an_external_agent_all_it_needs() {
    let dir = temp("main");
    let data = dir.join("data");
    let server = serve(&data);
    let out = dir.join("principals.json");
    let run = |extra: &[&str]| {
        let mut args = vec!["principals", "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        dev(&args, &server.addr, &data)
    };
    let first = run(&["--load-agents", "2", "--missions", "2"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );

    // Mode 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    // The exact shape.
    let file: J = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(
        keys(&file),
        [
            "agents",
            "authority",
            "humans",
            "loadAgents",
            "mission",
            "missions",
            "protocolVersion"
        ]
    );
    assert_eq!(file["protocolVersion"], "0.1");
    let authority = &file["authority"];
    assert_eq!(keys(authority), ["keyId", "principal", "publicKey"]);
    assert!(is_key(s(authority, "/publicKey")));
    assert_eq!(s(authority, "/principal/type"), "service");
    assert_eq!(keys(&authority["principal"]), ["id", "type"]);
    let agents = &file["agents"];
    assert_eq!(
        keys(agents),
        ["coordinator", "load-01", "load-02", "outsider", "worker"]
    );
    for (name, a) in agents.as_object().unwrap() {
        let carded = name == "coordinator" || name == "worker";
        if carded {
            assert_eq!(
                keys(a),
                ["agentCardVersion", "agentId", "keyId", "privateKey"]
            );
            assert_eq!(a["agentCardVersion"], 1);
        } else {
            assert_eq!(keys(a), ["agentId", "keyId", "privateKey"], "{name}");
        }
        assert!(is_key(s(a, "/privateKey")), "{name}");
        assert!(s(a, "/agentId").ends_with(&format!(":agent:{name}")));
    }
    assert_eq!(
        file["loadAgents"],
        serde_json::json!(["load-01", "load-02"])
    );
    assert_eq!(keys(&file["humans"]), ["owner"]);
    let owner = &file["humans"]["owner"];
    assert_eq!(keys(owner), ["humanId", "keyId", "privateKey"]);
    assert!(is_key(s(owner, "/privateKey")));
    assert_eq!(file["missions"].as_array().unwrap().len(), 2);

    // Every key of the file is the Registry's, as the server serves it.
    let (status, body) = http(&server.addr, "GET", "/api/registry", b"");
    assert_eq!(status, 200);
    let registry = RegistryEvidence::from_fixture_json(&jv(&body))
        .unwrap()
        .validate()
        .unwrap();
    let binding = registry.binding(s(authority, "/keyId")).unwrap();
    assert_eq!(
        b64url_encode(binding.public_key.as_bytes()),
        s(authority, "/publicKey")
    );
    assert_eq!(binding.principal.id.0, s(authority, "/principal/id"));
    for who in agents.as_object().unwrap().values().chain([owner]) {
        let b = registry.binding(s(who, "/keyId")).unwrap();
        let seed = SecretSeed::from_b64url(s(who, "/privateKey")).unwrap();
        assert_eq!(b.public_key.as_bytes(), &seed.public_key());
    }
    assert!(!body.contains(s(owner, "/privateKey")));

    // The Missions are ACTIVE, as the authority's own projections say.
    let state = state_of(&data);
    let coordinator = s(agents, "/coordinator/agentId");
    let human = s(owner, "/humanId");
    check_mission(&file["mission"], &state, coordinator, human);
    let mut ids = vec![s(&file, "/mission/missionId")];
    for m in file["missions"].as_array().unwrap() {
        check_mission(m, &state, coordinator, human);
        ids.push(s(m, "/missionId"));
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "three distinct Missions");
    // The outsider is a member of no Group; the worker's card has software.python ≥ 1.
    let outsider = s(agents, "/outsider/agentId");
    assert!(
        state
            .groups
            .values()
            .all(|g| !g.memberships.contains_key(outsider))
    );
    let worker = s(agents, "/worker/agentId");
    assert!(state.cards[worker].capability_version("software.python") >= Some(1));
    for name in ["coordinator", "worker", "outsider", "load-01", "load-02"] {
        assert!(
            state
                .cards
                .contains_key(s(agents, &format!("/{name}/agentId")))
        );
    }

    // With the file alone (plus a Session, which HELLO opens over the binding; here the
    // gateway service opens it), the Coordinator acts in its ACTIVE Mission: a Membership
    // for the worker, and a proposal (work.propose needs an ACTIVE Mission).
    let org: J =
        serde_json::from_slice(&std::fs::read(data.join("organization.json")).unwrap()).unwrap();
    let gw = org["principals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "group-gateway")
        .unwrap();
    let session = |agent: &str, n: u32| -> u64 {
        let (status, body) = http(
            &server.addr,
            "POST",
            "/api/commands",
            &command(
                ("service", s(gw, "/actor/id")),
                s(gw, "/keyId"),
                s(gw, "/seed"),
                "ext.missionweaveprotocol.identity.session_open",
                &format!("urn:test:session:{n}"),
                &[],
                jv(&format!(r#"{{"agentId":"{agent}"}}"#)),
            ),
        );
        assert_eq!(status, 200, "{body}");
        let v: J = serde_json::from_str(&body).unwrap();
        v["events"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|e| e["payload"]["sessionEpoch"].as_u64())
            .unwrap()
    };
    let group = s(&file, "/mission/groupId");
    let epoch = session(coordinator, 1);
    let as_coordinator = |kind: &str, action: &str, payload: Value| {
        http(
            &server.addr,
            "POST",
            "/api/commands",
            &command(
                ("agent", coordinator),
                s(agents, "/coordinator/keyId"),
                s(agents, "/coordinator/privateKey"),
                kind,
                action,
                &[
                    ("groupId", Value::string(group.to_owned())),
                    ("sessionEpoch", Value::from(epoch)),
                    ("membershipEpoch", Value::from(1u64)),
                    ("coordinatorEpoch", Value::from(1u64)),
                ],
                payload,
            ),
        )
    };
    let (status, body) = as_coordinator(
        "membership.change",
        "urn:test:add-worker",
        jv(&format!(
            r#"{{"principal":{{"type":"agent","id":"{worker}"}},"roles":["worker"]}}"#
        )),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("membership.changed"), "{body}");
    let deadline = s(&file, "/mission/deadline");
    let (status, body) = as_coordinator(
        "work.propose",
        "urn:test:propose",
        jv(&format!(
            r#"{{"proposalId":"urn:test:proposal:1","contract":{{"goal":"Write the parser",
               "deliverables":["parser.py"],"acceptanceCriteria":["tests pass"],
               "deadline":"{deadline}",
               "requiredCapabilities":[{{"id":"software.python","minimumVersion":1}}]}}}}"#
        )),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("work.proposed"), "{body}");
    // A WorkItem through offer and acceptance by the worker (its card's software.python
    // matches the contract); its execution gate is the human's decision (`dev approve
    // execution`, below).
    let (status, body) = as_coordinator(
        "work.authorize",
        "urn:test:authorize",
        jv(&format!(
            r#"{{"workItemId":"urn:test:work:1","contract":{{"goal":"Deploy the parser",
               "deliverables":["a staging deployment"],"acceptanceCriteria":["smoke test passes"],
               "deadline":"{deadline}","sideEffectRisk":"external",
               "executionApproval":"human_required",
               "requiredCapabilities":[{{"id":"software.python","minimumVersion":1}}]}}}}"#
        )),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = as_coordinator(
        "work.offer",
        "urn:test:offer",
        jv(&format!(
            r#"{{"workItemId":"urn:test:work:1","candidateAgentIds":["{worker}"],"selectionBasis":{{}}}}"#
        )),
    );
    assert_eq!(status, 200, "{body}");
    let worker_epoch = session(worker, 3);
    let (status, body) = http(
        &server.addr,
        "POST",
        "/api/commands",
        &command(
            ("agent", worker),
            s(agents, "/worker/keyId"),
            s(agents, "/worker/privateKey"),
            "work.accept_offer",
            "urn:test:accept",
            &[
                ("groupId", Value::string(group.to_owned())),
                ("sessionEpoch", Value::from(worker_epoch)),
                ("membershipEpoch", Value::from(1u64)),
            ],
            jv(r#"{"workItemId":"urn:test:work:1"}"#),
        ),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("work.offer.accepted"), "{body}");

    // The outsider, with a Session of its own, is no member: to it the Group does not exist
    // (an absent and an undisclosed Group answer alike).
    let outsider_epoch = session(outsider, 2);
    let (status, body) = http(
        &server.addr,
        "POST",
        "/api/commands",
        &command(
            ("agent", outsider),
            s(agents, "/outsider/keyId"),
            s(agents, "/outsider/privateKey"),
            "work.propose",
            "urn:test:outsider-propose",
            &[
                ("groupId", Value::string(group.to_owned())),
                ("sessionEpoch", Value::from(outsider_epoch)),
                ("membershipEpoch", Value::from(1u64)),
            ],
            jv(&format!(
                r#"{{"proposalId":"urn:test:proposal:2","contract":{{"goal":"x",
                   "deliverables":["x"],"acceptanceCriteria":["x"],"deadline":"{deadline}"}}}}"#
            )),
        ),
    );
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("GROUP_NOT_FOUND"), "{body}");

    // A second run works: the cards are exact retries, the keys are the same, and the
    // Missions are new.
    let second = run(&[]);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(stdout.contains("0 registered"), "{stdout}");
    let again: J = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(
        again["agents"]["worker"]["privateKey"],
        file["agents"]["worker"]["privateKey"]
    );
    assert_eq!(again["loadAgents"], serde_json::json!(["load-01"]));
    assert_eq!(again["missions"].as_array().unwrap().len(), 1);
    assert_ne!(again["mission"]["missionId"], file["mission"]["missionId"]);
    let state = state_of(&data);
    check_mission(&again["mission"], &state, coordinator, human);

    // dev approve: nothing awaits approval (refused before sending), an unknown WorkItem is
    // named, and a Cooperation Override for the worker (a member now) is granted.
    let mission_id = s(&file, "/mission/missionId");
    let o = dev(
        &["approve", "mission", "--mission", mission_id],
        &server.addr,
        &data,
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not awaiting_approval"));
    let o = dev(
        &[
            "approve",
            "execution",
            "--work-item",
            "urn:test:nope",
            "--operations",
            "repo.write",
        ],
        &server.addr,
        &data,
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no WorkItem urn:test:nope"));
    // The execution gate of the accepted WorkItem, at its owner's ownership epoch; an
    // operation outside the Mission's permissions is the authority's refusal.
    let execution = |ops: &str| {
        dev(
            &[
                "approve",
                "execution",
                "--work-item",
                "urn:test:work:1",
                "--operations",
                ops,
            ],
            &server.addr,
            &data,
        )
    };
    let o = execution("launch.rockets");
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("refused: AUTH_FORBIDDEN"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = execution("repo.write,deploy.staging");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("approval.execution.granted"));
    let state = state_of(&data);
    let approvals: Vec<_> = state
        .execution_approvals
        .values()
        .filter(|a| a.work_item_id == "urn:test:work:1")
        .collect();
    assert_eq!(approvals.len(), 1);
    assert_eq!(
        approvals[0].ownership_epoch,
        state.work_items["urn:test:work:1"].ownership_epoch
    );
    let grant = |beneficiary: &str| {
        dev(
            &[
                "approve",
                "override",
                "--mission",
                mission_id,
                "--beneficiary",
                beneficiary,
                "--policy",
                "message_rate",
                "--target-kind",
                "message.post",
                "--target-action",
                "urn:test:burst",
                "--reason",
                "a burst of progress Messages",
            ],
            &server.addr,
            &data,
        )
    };
    let o = grant(worker);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("policy.cooperation_override.granted"));
    // The outsider has no Membership: the authority refuses.
    let o = grant(outsider);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("refused"));
    let state = state_of(&data);
    let granted: Vec<_> = state
        .override_grants
        .values()
        .filter(|g| g.beneficiary.id.0 == worker)
        .collect();
    assert_eq!(granted.len(), 1);

    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dev_principals_refuses_a_directory_without_a_development_organization() {
    let dir = temp("refuse");
    let data = dir.join("data");
    let server = serve(&data);
    let out = dir.join("p.json");
    let principals = |d: &Path| {
        dev(
            &["principals", "--out", out.to_str().unwrap()],
            &server.addr,
            d,
        )
    };
    // No organization.json at all.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = principals(&empty);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("holds no development Organization"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!empty.join("organization.json").exists(), "never created");
    // Another Organization's keys: not what this server serves.
    let other = dir.join("other");
    let other_server = serve(&other);
    drop(other_server);
    let o = principals(&other);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("does not serve the development Organization")
    );
    // A layout-1 file (an older weave-console's): refused with the way out.
    let old = dir.join("old");
    std::fs::create_dir_all(&old).unwrap();
    let mut org: J =
        serde_json::from_slice(&std::fs::read(data.join("organization.json")).unwrap()).unwrap();
    let o = org.as_object_mut().unwrap();
    o.remove("layout");
    o.remove("createdAt");
    o["principals"]
        .as_array_mut()
        .unwrap()
        .retain(|p| p["name"] != "worker" && p["name"] != "outsider");
    std::fs::write(old.join("organization.json"), org.to_string()).unwrap();
    {
        // As the server writes it: its owner's only (a readable key file is refused outright).
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            old.join("organization.json"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
    }
    let o = principals(&old);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("older weave-console") && err.contains("worker, outsider"),
        "{err}"
    );
    assert!(!out.exists(), "no file is written by a refused run");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `dev principals` against a `serve --tls` development server (it used to refuse every
/// `https://` URL, so an external Agent could not be given a file for a TLS server): with
/// `--ca` (the server's development certificate) it writes the file; without, it says what is
/// missing.
#[test]
fn dev_principals_works_against_a_tls_development_server() {
    let dir = temp("tls");
    let data = dir.join("data");
    let server = serve_with(&data, &["--tls", "--no-demo"]);
    let out = dir.join("principals.json");
    let run = |ca: Option<&Path>| {
        let mut c = Command::new(BIN);
        c.args([
            "dev",
            "principals",
            "--url",
            &format!("https://{}", server.addr),
        ])
        .arg("--data")
        .arg(&data)
        .arg("--out")
        .arg(&out);
        if let Some(ca) = ca {
            c.arg("--ca").arg(ca);
        }
        c.output().unwrap()
    };
    let o = run(None);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--ca"), "{o:?}");
    let o = run(Some(&data.join("tls").join("dev-cert.pem")));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let file: J = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(file["agents"]["coordinator"]["privateKey"].is_string());
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

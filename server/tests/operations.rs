//! The operator's side (docs/operations.md): `/metrics` on the operator's address only,
//! `/readyz`, JSON logs, and backup/restore checked before use.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::{Principal, Server, get, post};

use std::process::{Command, Stdio};
use wasm_core::json::{self, Object, Value};

/// A `mission.create` by the demo's MissionOwner for Group `group`.
fn mission_create(org: &Value, group: &str, action: &str) -> Vec<u8> {
    let mut p = Object::new();
    for (k, v) in [
        ("missionId", format!("{group}:mission")),
        ("groupId", group.to_owned()),
        ("title", "Operations test".to_owned()),
        ("objective", "Be watched".to_owned()),
        ("deadline", "2099-01-01T00:00:00Z".to_owned()),
    ] {
        p.insert(k, Value::string(v));
    }
    p.insert(
        "coordinatorId",
        Principal::of(org, "coordinator")
            .actor
            .pointer("/id")
            .unwrap()
            .clone(),
    );
    p.insert(
        "definitionOfDone",
        Value::Array(vec![Value::string("watched")]),
    );
    Principal::of(org, "mission-owner").command(
        "mission.create",
        action,
        &[("groupId", Value::string(group.to_owned()))],
        p,
    )
}

/// A `message.post` by `who` in `group`.
fn message(org: &Value, who: &str, group: &str, n: usize) -> Vec<u8> {
    let p = Principal::of(org, who);
    let mut payload = Object::new();
    payload.insert(
        "messageId",
        Value::string(format!("{group}:message:{who}:{n}")),
    );
    payload.insert("conversationId", Value::string(format!("{group}:mission")));
    payload.insert("content", Value::string(format!("note {n}")));
    p.command(
        "message.post",
        &format!("{group}:post:{who}:{n}"),
        &[
            ("groupId", Value::string(group.to_owned())),
            ("membershipEpoch", Value::from(1u64)),
        ],
        payload,
    )
}

/// `serve --no-demo` on `data` with `extra` flags (the shared `support::serve`).
fn serve(data: &std::path::Path, extra: &[&str]) -> Server {
    serve_env(data, extra, &[])
}

/// [`serve`] with `env` set.
fn serve_env(data: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
    support::serve(|c| {
        c.envs(env.iter().copied())
            .args(["--no-demo", "--addr", "127.0.0.1:0", "--data"])
            .arg(data)
            .args(extra);
    })
}

/// The value of the sample of `name` whose labels include every one of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .find(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn error_code(body: &str) -> String {
    let v = json::parse_str(body).unwrap();
    v.pointer("/code")
        .or_else(|| v.pointer("/error/code"))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no code in {body}"))
        .to_owned()
}

fn org_of(data: &std::path::Path) -> Value {
    json::parse(&std::fs::read(data.join("organization.json")).unwrap()).unwrap()
}

#[test]
fn metrics_are_served_on_the_operator_address_only_and_count_commands_by_kind_and_code() {
    let data = support::temp("ops", "metrics");
    let server = serve(&data, &["--metrics-addr", "127.0.0.1:0"]);
    let operator = server.operator.clone().expect("an operator listener line");
    let org = org_of(&data);
    let group = "urn:ops:metrics:group";
    // Accepted: one mission.create.
    let (code, body) = post(&server.addr, &mission_create(&org, group, "urn:ops:create")).unwrap();
    assert_eq!(code, 200, "{body}");
    // Refused by the authority: the same Group created again under another Action ID.
    let (code, body) = post(&server.addr, &mission_create(&org, group, "urn:ops:again")).unwrap();
    assert_ne!(code, 200, "{body}");
    let twice = error_code(&body);
    // Refused at verification: a signed Command changed after signing (its kind is not
    // trusted, so it is counted as `unverified`).
    let mut forged = String::from_utf8(message(&org, "mission-owner", group, 1)).unwrap();
    forged = forged.replace("note 1", "note 2");
    let (code, body) = post(&server.addr, forged.as_bytes()).unwrap();
    assert_ne!(code, 200, "{body}");
    let bad_signature = error_code(&body);
    // Two accepted message.post.
    let sent: Vec<Vec<u8>> = (3..5)
        .map(|n| message(&org, "mission-owner", group, n))
        .collect();
    for bytes in &sent {
        let (code, body) = post(&server.addr, bytes).unwrap();
        assert_eq!(code, 200, "{body}");
    }
    // An exact retry: the same bytes (signed again, a second later, they would be another
    // Command under the same Action ID).
    let (code, body) = post(&server.addr, &sent[0]).unwrap();
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"duplicate\""), "{body}");

    let (status, text) = get(&operator, "/metrics").unwrap();
    assert_eq!(status, 200, "{text}");
    let count = |name: &str, labels: &[(&str, &str)]| sample(&text, name, labels);
    assert_eq!(
        count("mwp_commands_accepted_total", &[("kind", "mission.create")]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        count("mwp_commands_accepted_total", &[("kind", "message.post")]),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        count("mwp_commands_duplicate_total", &[("kind", "message.post")]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        count(
            "mwp_commands_refused_total",
            &[("kind", "mission.create"), ("code", &twice)]
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        count(
            "mwp_commands_refused_total",
            &[("kind", "unverified"), ("code", &bad_signature)]
        ),
        Some(1.0),
        "{text}"
    );
    // The other families are there: batches, the disk, verification, the hub, the process.
    for family in [
        "mwp_commit_batch_events_bucket",
        "mwp_fsync_seconds_bucket",
        "mwp_verify_batch_seconds_bucket",
        "mwp_sockets_open",
        "mwp_subscriptions",
        "mwp_outbound_queued_frames",
        "mwp_groups",
        "mwp_events",
        "mwp_process_resident_memory_bytes",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(family)),
            "{family} missing:\n{text}"
        );
    }
    let rss = count("mwp_process_resident_memory_bytes", &[]).unwrap();
    assert!(rss > 1e6, "RSS {rss}");
    // The Group the test created is counted (the development Organization has none yet).
    assert!(count("mwp_groups", &[]).unwrap() >= 1.0, "{text}");
    // Five Events at least: the Group's creation and two Messages (plus the bootstrap's).
    assert!(count("mwp_events", &[]).unwrap() >= 5.0, "{text}");

    // Not on the public address.
    let (status, body) = get(&server.addr, "/metrics").unwrap();
    assert_eq!(status, 404, "{body}");
    assert!(!body.contains("mwp_"), "{body}");
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn without_the_flag_there_is_no_operator_listener() {
    let data = support::temp("ops", "nometrics");
    let server = serve(&data, &[]);
    assert!(server.operator.is_none(), "{:?}", server.printed);
    assert_eq!(get(&server.addr, "/metrics").unwrap().0, 404);
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn readyz_is_ready_once_replayed_and_distinct_from_healthz() {
    let data = support::temp("ops", "readyz");
    let server = serve(&data, &["--metrics-addr", "127.0.0.1:0"]);
    let operator = server.operator.clone().unwrap();
    for addr in [&server.addr, &operator] {
        let (status, body) = get(addr, "/readyz").unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            json::parse_str(&body).unwrap().pointer("/ready"),
            Some(&Value::Bool(true))
        );
    }
    assert_eq!(
        get(&server.addr, "/healthz").unwrap(),
        (200, "ok".to_owned())
    );
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn readyz_answers_503_once_the_store_fails_and_healthz_still_200() {
    let data = support::temp("ops", "storefail");
    let server = serve(&data, &["--metrics-addr", "127.0.0.1:0"]);
    let operator = server.operator.clone().unwrap();
    let org = org_of(&data);
    let (code, body) = post(
        &server.addr,
        &mission_create(&org, "urn:ops:fail:one", "urn:ops:fail:1"),
    )
    .unwrap();
    assert_eq!(code, 200, "{body}");
    for addr in [&server.addr, &operator] {
        assert_eq!(get(addr, "/readyz").unwrap().0, 200);
    }
    // The attack: the log's table taken away under the running server (a hand or a tool on
    // the file; a failing disk does the like). The next write fails, so does the replay the
    // authority then tries, and it stops deciding.
    rusqlite::Connection::open(data.join("authority.sqlite"))
        .and_then(|c| {
            c.busy_timeout(std::time::Duration::from_secs(10))?;
            c.execute_batch("ALTER TABLE log RENAME TO log_taken_away")
        })
        .unwrap();
    let (code, body) = post(
        &server.addr,
        &mission_create(&org, "urn:ops:fail:two", "urn:ops:fail:2"),
    )
    .unwrap();
    assert_ne!(code, 200, "{body}");
    assert_eq!(error_code(&body), "INTERNAL_ERROR", "{body}");
    // Not ready, on both listeners, with the reason; the process still answers /healthz.
    for addr in [&server.addr, &operator] {
        let (status, body) = get(addr, "/readyz").unwrap();
        assert_eq!(status, 503, "{body}");
        let v = json::parse_str(&body).unwrap();
        assert_eq!(v.pointer("/ready"), Some(&Value::Bool(false)));
        let reason = v.pointer("/reason").and_then(Value::as_str).unwrap();
        assert!(reason.contains("store"), "{reason}");
    }
    assert_eq!(
        get(&server.addr, "/healthz").unwrap(),
        (200, "ok".to_owned())
    );
    // And it stays so: a later Command is refused as well.
    let (code, _) = post(
        &server.addr,
        &mission_create(&org, "urn:ops:fail:three", "urn:ops:fail:3"),
    )
    .unwrap();
    assert_ne!(code, 200);
    assert_eq!(get(&operator, "/readyz").unwrap().0, 503);
    drop(server);
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn json_logs_carry_the_request_id_principal_and_latency_and_no_secret() {
    let data = support::temp("ops", "jsonlog");
    let log = data.join("stderr.log");
    std::fs::create_dir_all(data.join("d")).unwrap();
    let token = "opsTestToken_0123456789abcdefghijklmnop";
    let server = support::serve_logging(
        |c| {
            c.args(["--no-demo", "--addr", "127.0.0.1:0"])
                .args(["--log-format", "json"])
                .arg("--data")
                .arg(data.join("d"))
                .env("WEAVE_DEV_TOKEN", token)
                .env("RUST_LOG", "info");
        },
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    let addr = server.addr.clone();
    let org = org_of(&data.join("d"));
    let owner = Principal::of(&org, "mission-owner");
    let (code, body) = post(
        &addr,
        &mission_create(&org, "urn:ops:log:group", "urn:ops:log"),
    )
    .unwrap();
    assert_eq!(code, 200, "{body}");
    // A token in a query string (as a careless link would carry it) is not logged.
    let _ = get(&addr, &format!("/join?token={token}"));
    // A WebSocket session of an Agent: HELLO, then closed.
    let agent = Principal::of(&org, "coordinator");
    let agent_id = agent
        .actor
        .pointer("/id")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut c = server::gateway::client::Client::connect(&format!("ws://{addr}/ws"), None)
            .await
            .unwrap();
        let signer = wasm_core::crypto::ed25519::Signer::from_seed(&agent.seed);
        c.hello(&agent_id, &agent.key_id, &signer)
            .await
            .map_err(|e| json::to_string(&e))
            .unwrap();
        drop(c);
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    let mut answered = Vec::new();
    let mut sessions = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v = json::parse_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        match v.pointer("/message").and_then(Value::as_str) {
            Some("answered") => answered.push(v),
            Some("session opened" | "session closed") => sessions.push(v),
            _ => {}
        }
    }
    // The session's lines: the upgrade request's id and path, the principal HELLO named, and
    // at its end the session's duration.
    assert_eq!(sessions.len(), 2, "{text}");
    for s in &sessions {
        assert_eq!(
            s.pointer("/spans/0/path").and_then(Value::as_str),
            Some("/ws"),
            "{text}"
        );
        assert!(s.pointer("/spans/0/request_id").is_some(), "{text}");
        assert_eq!(
            s.pointer("/spans/1/principal").and_then(Value::as_str),
            Some(agent_id.as_str()),
            "{text}"
        );
    }
    assert_eq!(
        sessions[0].pointer("/spans/0/request_id"),
        sessions[1].pointer("/spans/0/request_id")
    );
    assert!(
        matches!(sessions[1].pointer("/latency_ms"), Some(Value::Number(_))),
        "{text}"
    );
    let owner_id = owner.actor.pointer("/id").and_then(Value::as_str).unwrap();
    let post_line = answered
        .iter()
        .find(|v| v.pointer("/spans/0/path").and_then(Value::as_str) == Some("/api/commands"))
        .unwrap_or_else(|| panic!("no answered POST in:\n{text}"));
    assert_eq!(
        post_line
            .pointer("/spans/0/principal")
            .and_then(Value::as_str),
        Some(owner_id),
        "{text}"
    );
    assert!(post_line.pointer("/spans/0/request_id").is_some(), "{text}");
    assert!(
        matches!(post_line.pointer("/latency_ms"), Some(Value::Number(_))),
        "{text}"
    );
    assert_eq!(post_line.pointer("/status"), Some(&Value::from(200u64)));
    // Each request its own id.
    let ids: std::collections::HashSet<String> = answered
        .iter()
        .filter_map(|v| v.pointer("/spans/0/request_id"))
        .map(json::to_string)
        .collect();
    assert_eq!(ids.len(), answered.len(), "{text}");
    // No secret: the enrolment token, any principal's seed.
    assert!(!text.contains(token), "the token is logged:\n{text}");
    let Value::Array(all) = org.pointer("/principals").unwrap() else {
        panic!()
    };
    for p in all {
        if let Some(seed) = p.pointer("/seed").and_then(Value::as_str) {
            assert!(!text.contains(seed), "a seed is logged");
        }
    }
    assert!(!text.contains(&owner.seed_text));
    let _ = std::fs::remove_dir_all(&data);
}

/// The number that follows the first `after` in `text` (`None`: no such text or number).
fn number_after(text: &str, after: &str) -> Option<i64> {
    let rest = text.split(after).nth(1)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Runs `weave-console ARGS`: success, stdout, stderr.
fn cli(args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let out = Command::new(support::BIN).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

#[test]
fn a_backup_taken_while_serving_restores_to_the_same_projection_and_a_changed_byte_is_refused() {
    let root = support::temp("ops", "backup");
    let data = root.join("live");
    // Snapshots every 100 Events: the backup checks its copy against the server's own State.
    // The Message rate limit lifted: the load posts as fast as the server answers.
    let server = serve_env(
        &data,
        &["--message-rate-per-minute", "1000000"],
        &[("MWP_SNAPSHOT_EVERY", "100")],
    );
    let org = org_of(&data);
    let group = "urn:ops:backup:group";
    let (code, body) = post(
        &server.addr,
        &mission_create(&org, group, "urn:ops:b:create"),
    )
    .unwrap();
    assert_eq!(code, 200, "{body}");
    // Commands keep coming while the backup is taken.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (addr, org2, stop2, accepted2) = (
        server.addr.clone(),
        org.clone(),
        stop.clone(),
        accepted.clone(),
    );
    let load = std::thread::spawn(move || {
        let mut n = 0;
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) && n < 5000 {
            let (code, body) = post(&addr, &message(&org2, "mission-owner", group, n)).unwrap();
            assert_eq!(code, 200, "{body}");
            n += 1;
            accepted2.store(n, std::sync::atomic::Ordering::Relaxed);
        }
        n
    });
    // Past the first snapshot (100 Events; written in the background).
    let snapshots = data.join("authority.snapshots.sqlite");
    let t = std::time::Instant::now();
    while t.elapsed() < std::time::Duration::from_secs(30) {
        let written = rusqlite::Connection::open(&snapshots)
            .and_then(|c| c.query_row("SELECT count(*) FROM snapshot", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0);
        if written > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let file = root.join("backup.mwp");
    let before = accepted.load(std::sync::atomic::Ordering::Relaxed);
    let (ok, out, err) = cli(&[
        os("backup"),
        os("--data"),
        data.as_os_str(),
        os("--out"),
        file.as_os_str(),
    ]);
    let after = accepted.load(std::sync::atomic::Ordering::Relaxed);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = load.join().unwrap();
    assert!(ok, "{out}{err}");
    assert!(sent < 5000, "the load ran out before the backup ended");
    assert!(
        after > before,
        "Commands were accepted while the backup ran ({before} → {after})"
    );
    // The copy replayed to the position the running server answered for gives the projection
    // the server computed from its memory there; the copy reaches at least that far.
    assert!(
        out.contains("checked against the running server: projection "),
        "{out}"
    );
    let copied = number_after(&out, "through position ").unwrap();
    let witnessed = number_after(&out, " at position ").unwrap();
    assert!(witnessed > 0 && witnessed <= copied, "{out}");
    let projection = out
        .split("projection ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .unwrap()
        .to_owned();
    drop(server);

    // With the server stopped nothing answers on its socket: the backup says so and falls back
    // on the newest snapshot the server wrote (every 100 Events here).
    let offline = root.join("offline.mwp");
    let (ok, out, err) = cli(&[
        os("backup"),
        os("--data"),
        data.as_os_str(),
        os("--out"),
        offline.as_os_str(),
    ]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("no server answered on "), "{out}");
    assert!(
        out.contains("the server's snapshot through position "),
        "{out}"
    );
    // A Message before that snapshot rewritten and signed again on disk: the snapshot, written
    // from the server's memory, no longer matches the log; the backup is refused.
    forge_message(&data.join("authority.sqlite"), &org, 0);
    let (ok, out, err) = cli(&[
        os("backup"),
        os("--data"),
        data.as_os_str(),
        os("--out"),
        root.join("after-forgery.mwp").as_os_str(),
    ]);
    assert!(!ok, "{out}");
    assert!(err.contains("the server's snapshot held"), "{err}");

    // Restored, it serves the projection the backup recorded.
    let restored = root.join("restored");
    let (ok, out, err) = cli(&[
        os("restore"),
        os("--from"),
        file.as_os_str(),
        os("--data"),
        restored.as_os_str(),
    ]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains(&format!("at position {witnessed} projection "))
            && out.contains("as the running server held it"),
        "{out}"
    );
    let again = serve(&restored, &[]);
    let ready = again
        .printed
        .iter()
        .find(|l| l.contains("authority ready"))
        .unwrap();
    assert!(
        ready.ends_with(&format!("projection {projection}")),
        "{ready} / {projection}"
    );
    drop(again);

    // A non-empty directory is not replaced without --force.
    let (ok, _, err) = cli(&[
        os("restore"),
        os("--from"),
        file.as_os_str(),
        os("--data"),
        restored.as_os_str(),
    ]);
    assert!(!ok && err.contains("--force"), "{err}");

    // One byte changed in one Event of a copy of the backup: refused, the Event named, and
    // nothing left behind.
    let bad = root.join("changed.mwp");
    std::fs::copy(&file, &bad).unwrap();
    let event_id = {
        let conn = rusqlite::Connection::open(&bad).unwrap();
        let (position, jcs): (i64, Vec<u8>) = conn
            .query_row(
                "SELECT position, jcs FROM log WHERE kind = 'message.posted' ORDER BY position \
                 LIMIT 1 OFFSET 3",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let text = String::from_utf8(jcs.clone()).unwrap();
        let at = text.find("note ").unwrap() + 5;
        let mut changed = jcs;
        changed[at] = if changed[at] == b'9' { b'8' } else { b'9' };
        conn.execute(
            "UPDATE log SET jcs = ?1 WHERE position = ?2",
            rusqlite::params![changed, position],
        )
        .unwrap();
        json::parse_str(&text)
            .unwrap()
            .pointer("/eventId")
            .and_then(Value::as_str)
            .unwrap()
            .to_owned()
    };
    let target = root.join("from-changed");
    let (ok, out, err) = cli(&[
        os("restore"),
        os("--from"),
        bad.as_os_str(),
        os("--data"),
        target.as_os_str(),
    ]);
    assert!(!ok, "{out}");
    assert!(err.contains(&event_id), "{err} does not name {event_id}");
    assert!(!target.exists(), "nothing half-restored");
    // A backup naming a file outside the directory (a crafted one): refused, nothing written
    // there.
    let crafted = root.join("crafted.mwp");
    std::fs::copy(&file, &crafted).unwrap();
    rusqlite::Connection::open(&crafted)
        .unwrap()
        .execute(
            "INSERT INTO mwp_backup_files (path, mode, bytes) VALUES ('../escaped.txt', 420, x'00')",
            [],
        )
        .unwrap();
    let target = root.join("from-crafted");
    let (ok, _, err) = cli(&[
        os("restore"),
        os("--from"),
        crafted.as_os_str(),
        os("--data"),
        target.as_os_str(),
    ]);
    assert!(!ok && err.contains("outside its directory"), "{err}");
    assert!(!root.join("escaped.txt").exists() && !target.exists());
    let left: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("restoring"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&root);
}

/// Rewrites the `nth` `message.posted` Event of the log at `db` (its content changed) and
/// signs it again with the key it names, taken from the development Organization `org`: the
/// forgery of someone who holds the data directory, keys included. Every signature still holds
/// and every sequence is still gapless; only the State it replays to differs. Returns the
/// Event's position.
fn forge_message(db: &std::path::Path, org: &Value, nth: i64) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    let (position, jcs): (i64, Vec<u8>) = conn
        .query_row(
            "SELECT position, jcs FROM log WHERE kind = 'message.posted' ORDER BY position \
             LIMIT 1 OFFSET ?1",
            [nth],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let text = String::from_utf8(jcs).unwrap();
    assert!(text.contains("\"note "), "{text}");
    let mut doc = json::parse_str(&text.replace("\"note ", "\"forged ")).unwrap();
    let key_id = doc
        .pointer("/signature/keyId")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let Some(Value::Array(all)) = org.pointer("/principals") else {
        panic!("no principals")
    };
    let signer = all
        .iter()
        .find(|p| p.pointer("/keyId").and_then(Value::as_str) == Some(key_id.as_str()))
        .unwrap_or_else(|| panic!("no key {key_id} in the Organization"));
    let seed = wasm_core::crypto::SecretSeed::from_b64url(
        signer.pointer("/seed").and_then(Value::as_str).unwrap(),
    )
    .unwrap();
    wasm_core::crypto::sign_document(
        &mut doc,
        wasm_core::crypto::DocumentKind::Event,
        &key_id,
        &seed,
    )
    .unwrap();
    conn.execute(
        "UPDATE log SET jcs = ?1 WHERE position = ?2",
        rusqlite::params![json::canonicalize(&doc).unwrap(), position],
    )
    .unwrap();
    position
}

#[test]
fn a_log_rewritten_and_signed_again_is_caught_by_the_running_servers_projection() {
    let root = support::temp("ops", "witness");
    let data = root.join("live");
    let server = serve(&data, &[]);
    let org = org_of(&data);
    let group = "urn:ops:witness:group";
    let (code, body) = post(
        &server.addr,
        &mission_create(&org, group, "urn:ops:w:create"),
    )
    .unwrap();
    assert_eq!(code, 200, "{body}");
    for n in 0..4 {
        let (code, body) = post(&server.addr, &message(&org, "mission-owner", group, n)).unwrap();
        assert_eq!(code, 200, "{body}");
    }
    let backup = |out: &std::path::Path| {
        cli(&[
            os("backup"),
            os("--data"),
            data.as_os_str(),
            os("--out"),
            out.as_os_str(),
        ])
    };
    // A backup of the untouched log: checked against the running server's memory.
    let good = root.join("good.mwp");
    let (ok, out, err) = backup(&good);
    assert!(ok, "{out}{err}");
    assert!(out.contains("checked against the running server"), "{out}");
    let witnessed = number_after(&out, " at position ").unwrap();

    // The attack on a backup: an Event before the witness's position rewritten and signed
    // again. Signatures and sequences hold; the projection at the witness's position does not.
    let forged = root.join("forged.mwp");
    std::fs::copy(&good, &forged).unwrap();
    let at = forge_message(&forged, &org, 1);
    assert!(at < witnessed, "{at} {witnessed}");
    let target = root.join("from-forged");
    let (ok, out, err) = cli(&[
        os("restore"),
        os("--from"),
        forged.as_os_str(),
        os("--data"),
        target.as_os_str(),
    ]);
    assert!(!ok, "{out}");
    assert!(
        err.contains(&format!("replayed to position {witnessed}"))
            && err.contains("the running server held"),
        "{err}"
    );
    assert!(!target.exists(), "nothing half-restored");

    // The attack on the live log: the same forgery in the server's own file, under it. The
    // log alone cannot tell; the server's memory can: the backup is refused, no file left.
    forge_message(&data.join("authority.sqlite"), &org, 2);
    let refused = root.join("refused.mwp");
    let (ok, out, err) = backup(&refused);
    assert!(!ok, "{out}");
    assert!(err.contains("the running server held"), "{err}");
    assert!(!refused.exists() && !root.join("refused.partial").exists());

    // Without the server, nothing but the log speaks: the forged log passes every check the
    // log allows, and the backup says its projection is checked against nothing else.
    drop(server);
    let unwitnessed = root.join("unwitnessed.mwp");
    let (ok, out, err) = backup(&unwitnessed);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("no server answered on ")
            && out.contains("checked against nothing the server computed"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

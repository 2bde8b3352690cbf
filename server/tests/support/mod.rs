//! What the server's integration tests share: the binary under test, a `weave-console serve`
//! that is killed when dropped, and a fresh temporary directory. (The protocol fixtures are in
//! `simulation::kit`; these spawn a process, so they stay with the server's tests.) Each test
//! file uses part of it.
#![allow(dead_code)]

pub mod gates;
pub mod org;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_weave-console");

/// A spawned `weave-console serve` and the address it listens on; killed when dropped.
pub struct Server {
    pub child: Child,
    pub addr: String,
    /// The operator's listener (`--metrics-addr`), when the server printed one.
    pub operator: Option<String>,
    /// What it printed up to its `listening on` line (the `authority ready` line among them).
    pub printed: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A new, empty directory `weave-<prefix>-<name>-<pid>` in the system's temporary directory.
pub fn temp(prefix: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weave-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Starts `weave-console serve --public <the repository's public/>` with what `configure` adds
/// (flags, environment), and waits for its `listening on http://ADDR` (or `https://`) line.
/// Its stdout is drained from then on, so the server never blocks on a full pipe.
pub fn serve(configure: impl FnOnce(&mut Command)) -> Server {
    serve_logging(configure, Stdio::null())
}

/// [`serve`] with the server's stderr (its log) sent to `stderr`.
pub fn serve_logging(configure: impl FnOnce(&mut Command), stderr: Stdio) -> Server {
    let mut command = Command::new(BIN);
    command.arg("serve").args([
        "--public",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../public"),
    ]);
    configure(&mut command);
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("{BIN} does not start: {e}"));
    let Some(stdout) = child.stdout.take() else {
        panic!("the server's stdout is piped");
    };
    let mut lines = BufReader::new(stdout).lines();
    let mut operator = None;
    let mut printed = Vec::new();
    let addr = loop {
        let line = match lines.next() {
            Some(Ok(line)) => line,
            other => panic!("the server exited before listening: {other:?}"),
        };
        if let Some(a) = line.split("operator listener on http://").nth(1) {
            operator = a.split_whitespace().next().map(str::to_owned);
        }
        printed.push(line.clone());
        if let Some(a) = line
            .split("listening on http://")
            .nth(1)
            .or_else(|| line.split("listening on https://").nth(1))
        {
            break a.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Server {
        child,
        addr,
        operator,
        printed,
    }
}

/// `weave-console dev ARGS --url http://URL --data DATA`.
pub fn dev(args: &[&str], url: &str, data: &std::path::Path) -> std::process::Output {
    Command::new(BIN)
        .arg("dev")
        .args(args)
        .args(["--url", &format!("http://{url}")])
        .arg("--data")
        .arg(data)
        .output()
        .unwrap_or_else(|e| panic!("{BIN} dev: {e}"))
}

/// `weave-console dev principals --out OUT` against the server at `url` serving `data`: the
/// file it wrote (the development Agents' keys and an ACTIVE Mission), parsed.
pub fn dev_principals(
    url: &str,
    data: &std::path::Path,
    out: &std::path::Path,
) -> serde_json::Value {
    let mut args = vec!["principals", "--out"];
    let path = out.to_string_lossy().into_owned();
    args.push(&path);
    let run = dev(&args, url, data);
    assert!(
        run.status.success(),
        "dev principals: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let bytes = std::fs::read(out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", out.display()))
}

/// `POST /api/commands` with `body` over a minimal HTTP/1.1 client (the tests need no HTTP
/// client dependency): the status and the body.
pub fn post(addr: &str, body: &[u8]) -> std::io::Result<(u16, String)> {
    request(
        addr,
        &format!(
            "POST /api/commands HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ),
        body,
    )
}

/// `GET path` over the same client: the status and the body.
pub fn get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    request(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
        b"",
    )
}

fn request(addr: &str, head: &str, body: &[u8]) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))?;
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status in {text:?}")))?;
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    Ok((status, body))
}

/// A Principal of the Organization a server wrote to `organization.json` (the development
/// Organization keeps its keys there): the actor, its key id and its seed, to sign Commands.
pub struct Principal {
    pub actor: wasm_core::json::Value,
    pub key_id: String,
    pub seed: wasm_core::crypto::SecretSeed,
    /// The seed as the Organization file spells it (tests check that no log shows it).
    pub seed_text: String,
}

impl Principal {
    /// The Principal named `name` in the Organization document `org`.
    pub fn of(org: &wasm_core::json::Value, name: &str) -> Principal {
        use wasm_core::json::Value;
        let Some(Value::Array(list)) = org.pointer("/principals") else {
            panic!("no principals in the Organization")
        };
        let Some(p) = list
            .iter()
            .find(|p| p.pointer("/name").and_then(Value::as_str) == Some(name))
        else {
            panic!("no Principal named {name}")
        };
        let text = |pointer: &str| {
            p.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("{name}: no {pointer}"))
                .to_owned()
        };
        Principal {
            actor: p
                .pointer("/actor")
                .unwrap_or_else(|| panic!("{name}: no actor"))
                .clone(),
            key_id: text("/keyId"),
            seed: wasm_core::crypto::SecretSeed::from_b64url(&text("/seed"))
                .unwrap_or_else(|| panic!("{name}: the seed is not base64url")),
            seed_text: text("/seed"),
        }
    }

    /// A Principal of `actor_type` and `actor_id` signing with `key_id` and the base64url seed
    /// `seed_text` (as `dev principals` writes them).
    pub fn new(actor_type: &str, actor_id: &str, key_id: &str, seed_text: &str) -> Principal {
        let mut actor = wasm_core::json::Object::new();
        actor.insert(
            "type",
            wasm_core::json::Value::string(actor_type.to_owned()),
        );
        actor.insert("id", wasm_core::json::Value::string(actor_id.to_owned()));
        Principal {
            actor: wasm_core::json::Value::Object(actor),
            key_id: key_id.to_owned(),
            seed: wasm_core::crypto::SecretSeed::from_b64url(seed_text)
                .unwrap_or_else(|| panic!("{actor_id}: the seed is not base64url")),
            seed_text: seed_text.to_owned(),
        }
    }

    /// The Principal named `name` in `data`'s `organization.json`.
    pub fn in_data(data: &std::path::Path, name: &str) -> Principal {
        let path = data.join("organization.json");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let org =
            wasm_core::json::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Principal::of(&org, name)
    }

    pub fn id(&self) -> String {
        self.actor
            .pointer("/id")
            .and_then(wasm_core::json::Value::as_str)
            .unwrap_or_else(|| panic!("an actor without an id"))
            .to_owned()
    }

    /// A Command of `kind` signed by this Principal, issued a second ago by the wall clock
    /// (the servers under test keep the real clock), with `env`'s envelope members.
    pub fn command(
        &self,
        kind: &str,
        action: &str,
        env: &[(&str, wasm_core::json::Value)],
        payload: wasm_core::json::Object,
    ) -> Vec<u8> {
        use wasm_core::json::{Object, Value};
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let mut o = Object::new();
        o.insert("protocolVersion", Value::string("0.1"));
        o.insert("actionId", Value::string(action.to_owned()));
        o.insert("actor", self.actor.clone());
        for (k, v) in env {
            o.insert((*k).to_owned(), v.clone());
        }
        o.insert("kind", Value::string(kind.to_owned()));
        o.insert("correlationId", Value::string(action.to_owned()));
        o.insert(
            "issuedAt",
            Value::string(wasm_core::time::format_utc(secs - 1)),
        );
        o.insert("payload", Value::Object(payload));
        let mut doc = Value::Object(o);
        if let Err(e) = wasm_core::crypto::sign_document(
            &mut doc,
            wasm_core::crypto::DocumentKind::Command,
            &self.key_id,
            &self.seed,
        ) {
            panic!("signing: {e}");
        }
        wasm_core::json::to_string(&doc).into_bytes()
    }
}

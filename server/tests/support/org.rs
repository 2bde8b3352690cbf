//! What the tests of an Organization of one's own share (`organization.rs`, `rotation.rs`): the
//! `org` command, a `serve` whose stdout is watched, plain HTTP, an enrolment and a human who
//! signs Commands with their own key.

use super::BIN;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wasm_core::crypto::{DocumentKind, SecretSeed, sign_document};
use wasm_core::encoding::b64url_encode;
use wasm_core::json::{self, Object, Value};

pub fn org(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .arg("org")
        .args(args)
        .arg("--data")
        .arg(dir)
        .env_remove("WEAVE_DATA")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub struct OrgServer(pub Child, pub String);

impl Drop for OrgServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    http_with(addr, method, path, body, &[])
}

pub fn http_with(
    addr: &str,
    method: &str,
    path: &str,
    body: &[u8],
    headers: &[(&str, String)],
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n{extra}\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (
        status,
        text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned(),
    )
}

pub fn enrol(
    addr: &str,
    name: &str,
    key_id: &str,
    seed: &SecretSeed,
    token: &str,
) -> (u16, String) {
    let body = format!(
        r#"{{"principalId":"urn:missionweaveprotocol:human:{name}","keyId":"{key_id}","publicKey":"{}","token":"{token}"}}"#,
        b64url_encode(&seed.public_key())
    );
    http(addr, "POST", "/api/enrol", body.as_bytes())
}

/// A human of the Organization signing with their own key.
pub struct Human<'a> {
    pub who: &'a str,
    pub key_id: &'a str,
    pub seed: &'a SecretSeed,
}

impl Human<'_> {
    /// Signs and submits `kind` in `group` (`POST /api/commands`); a human Command carries its
    /// Membership Epoch, except `mission.create` (§15.1, I-16).
    pub fn command(
        &self,
        addr: &str,
        action: &str,
        group: &str,
        kind: &str,
        payload: Object,
        membership_epoch: Option<u64>,
    ) -> (u16, String) {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let mut o = Object::new();
        o.insert("protocolVersion", Value::string("0.1"));
        o.insert("actionId", Value::string(action.to_owned()));
        let mut a = Object::new();
        a.insert("type", Value::string("human"));
        a.insert(
            "id",
            Value::string(format!("urn:missionweaveprotocol:human:{}", self.who)),
        );
        o.insert("actor", Value::Object(a));
        o.insert("groupId", Value::string(group.to_owned()));
        if let Some(e) = membership_epoch {
            o.insert("membershipEpoch", Value::from(e));
        }
        o.insert("kind", Value::string(kind.to_owned()));
        o.insert("correlationId", Value::string(action.to_owned()));
        o.insert("issuedAt", Value::string(wasm_core::time::format_utc(secs)));
        o.insert("payload", Value::Object(payload));
        let mut doc = Value::Object(o);
        sign_document(&mut doc, DocumentKind::Command, self.key_id, self.seed).unwrap();
        http(
            addr,
            "POST",
            "/api/commands",
            json::to_string(&doc).as_bytes(),
        )
    }
}

/// The invitation token in what `org invite` printed (`…/join#token=T&name=N`).
pub fn token_of(printed: &str) -> String {
    printed
        .split("token=")
        .nth(1)
        .and_then(|t| t.split('&').next())
        .unwrap()
        .to_owned()
}

/// Polls `f` every 200 ms for up to 10 s (the server applies file changes within a second).
pub fn eventually(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..50 {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// `serve --data DIR` whose stdout lines arrive on a channel, drained to the end (the demo talks
/// on stdout: a pipe nobody reads would stop it); also the lines printed before it listened.
pub fn serve_watched(dir: &Path) -> (OrgServer, Vec<String>, std::sync::mpsc::Receiver<String>) {
    serve_watched_with(dir, &[])
}

/// [`serve_watched`] with more arguments for `serve`.
pub fn serve_watched_with(
    dir: &Path,
    extra: &[&str],
) -> (OrgServer, Vec<String>, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--public",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../public"),
        ])
        .args(extra)
        .arg("--data")
        .arg(dir)
        .env_remove("WEAVE_DEV_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut start = Vec::new();
    let addr = loop {
        let line = rx.recv_timeout(Duration::from_secs(60)).expect("a line");
        if let Some(a) = line.split("listening on http://").nth(1) {
            break a.trim().to_owned();
        }
        start.push(line);
    };
    (OrgServer(child, addr), start, rx)
}

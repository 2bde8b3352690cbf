//! The development server as an attacker finds it (issue 26), through the real binary: a
//! cross-site page, a DNS-rebinding page, a caller without the enrolment token, a foreign
//! page opening the human socket, and an operator exposing the development Organization on the
//! network. Each attack is tried first; then the legitimate path is shown to still work, and
//! what it enrolled to survive a restart in `GET /api/registry`.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const TOKEN: &str = "exposure-test-token-0123456789";

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_weave-console"));
    c.env_remove("WEAVE_ADDR").env_remove("WEAVE_DATA");
    c
}

struct Server {
    child: Child,
    addr: String,
    stdout: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve --no-demo` on a free loopback port with the test's token.
fn start(data: &std::path::Path) -> Server {
    let mut child = bin()
        .args([
            "serve",
            "--no-demo",
            "--addr",
            "127.0.0.1:0",
            "--public",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../public"),
            "--data",
        ])
        .arg(data)
        .env("WEAVE_DEV_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stdout = Vec::new();
    let mut addr = None;
    // The address, then the join link and the token lines.
    while let Some(Ok(line)) = lines.next() {
        if let Some(a) = line.split("listening on http://").nth(1) {
            addr = Some(a.trim().to_owned());
        }
        let done = line.contains("enrolment token:");
        stdout.push(line);
        if done {
            break;
        }
    }
    Server {
        child,
        addr: addr.expect("listening line"),
        stdout,
    }
}

/// One raw HTTP/1.1 request; the status and the body.
fn request(addr: &str, head: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut bytes = Vec::new();
    if head.contains("Upgrade: websocket") {
        // A 101 keeps the connection open: its head is all there is to read.
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).unwrap_or(0);
        bytes.extend_from_slice(&buf[..n]);
    } else {
        let _ = s.read_to_end(&mut bytes);
    }
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

fn enrol_body(name: &str, key_byte: u8, token: Option<&str>) -> String {
    let seed = wasm_core::crypto::SecretSeed::take(&mut [key_byte; 32]);
    let public = wasm_core::encoding::b64url_encode(&seed.public_key());
    let t = token.map_or(String::new(), |t| format!(r#","token":"{t}""#));
    format!(
        r#"{{"principalId":"urn:missionweaveprotocol:human:{name}","keyId":"urn:missionweaveprotocol:key:{name}-k{key_byte}","publicKey":"{public}"{t}}}"#
    )
}

#[test]
fn the_development_server_refuses_cross_site_rebinding_and_tokenless_callers() {
    let dir = std::env::temp_dir().join(format!("weave-exposure-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("data");
    let srv = start(&data);
    let a = srv.addr.clone();

    // The link that opens the console for the demo's MissionOwner carries the token in its
    // fragment (never sent to a server, never in a log).
    let link = srv
        .stdout
        .iter()
        .find(|l| l.contains("/join#"))
        .expect("a join link");
    assert!(
        link.contains(&format!("http://{a}/join#token={TOKEN}&name=mission-owner")),
        "{link}"
    );
    // A new data directory is private to its owner.
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    // 1. A cross-site form post (text/plain needs no CORS preflight), even one that somehow
    //    holds the token: 403 before any handler runs.
    let owner = enrol_body("mission-owner", 41, Some(TOKEN));
    let (status, body) = request(
        &a,
        &format!(
            "POST /api/enrol HTTP/1.1\r\nHost: {a}\r\nOrigin: https://evil.example\r\n\
             Content-Type: text/plain"
        ),
        owner.as_bytes(),
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("AUTH_FORBIDDEN"), "{body}");
    // …and with JSON declared: still another origin.
    let (status, _) = request(
        &a,
        &format!(
            "POST /api/enrol HTTP/1.1\r\nHost: {a}\r\nOrigin: https://evil.example\r\n\
             Content-Type: application/json"
        ),
        owner.as_bytes(),
    );
    assert_eq!(status, 403);
    // 2. No Content-Type: 415.
    let (status, _) = request(
        &a,
        &format!("POST /api/enrol HTTP/1.1\r\nHost: {a}"),
        owner.as_bytes(),
    );
    assert_eq!(status, 415);
    // 3. DNS rebinding: a page of evil.example resolved to this address.
    let port = a.rsplit(':').next().unwrap();
    let (status, body) = request(
        &a,
        &format!("GET /api/registry HTTP/1.1\r\nHost: evil.example:{port}"),
        b"",
    );
    assert_eq!(status, 421, "{body}");
    // 4. A foreign page opening the human socket: 403 before the upgrade.
    let upgrade = |origin: &str| {
        request(
            &a,
            &format!(
                "GET /ws?principal=human HTTP/1.1\r\nHost: {a}\r\nOrigin: {origin}\r\n\
                 Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="
            ),
            b"",
        )
        .0
    };
    assert_eq!(upgrade("https://evil.example"), 403);
    assert_eq!(
        upgrade(&format!("http://{a}")),
        101,
        "the console's own page"
    );
    // 5. Same origin, JSON, but no token or a wrong one: 403, nothing enrolled.
    let json_post = |body: &str| {
        request(
            &a,
            &format!(
                "POST /api/enrol HTTP/1.1\r\nHost: {a}\r\nOrigin: http://{a}\r\n\
                 Content-Type: application/json"
            ),
            body.as_bytes(),
        )
    };
    let (status, body) = json_post(&enrol_body("mission-owner", 41, None));
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("token"), "{body}");
    let (status, _) = json_post(&enrol_body(
        "mission-owner",
        41,
        Some("wrong-token-wrong-token"),
    ));
    assert_eq!(status, 403);
    // 6. The Group list of a human, unsigned: 401.
    let (status, body) = request(
        &a,
        &format!(
            "GET /api/groups/urn:missionweaveprotocol:human:mission-owner HTTP/1.1\r\nHost: {a}"
        ),
        b"",
    );
    assert_eq!(status, 401, "{body}");

    // The legitimate path: the console's own page with the token.
    let (status, body) = json_post(&owner);
    assert_eq!(status, 201, "{body}");
    let registry = |a: &str| request(a, &format!("GET /api/registry HTTP/1.1\r\nHost: {a}"), b"");
    let (status, body) = registry(&a);
    assert_eq!(status, 200);
    assert!(body.contains("mission-owner-k41"), "served at once");
    drop(srv);

    // After a restart the enrolled key is still served (it used to vanish).
    let srv = start(&data);
    let (status, body) = registry(&srv.addr);
    assert_eq!(status, 200);
    assert!(
        body.contains("mission-owner-k41"),
        "served after a restart: {body}"
    );
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `serve --addr 0.0.0.0:…` with the development Organization used to put every demo Agent's
/// key and the human enrolment on the network: refused now, with what to do instead.
#[test]
fn the_development_organization_is_not_served_off_loopback_by_default() {
    let dir = std::env::temp_dir().join(format!("weave-exposure-lan-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = |extra: &[&str]| {
        bin()
            .args(["serve", "--no-demo", "--addr", "0.0.0.0:0", "--data"])
            .arg(dir.join("data"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    };
    let out = run(&["--dev-cert"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--dev-open"), "{err}");
    assert!(!dir.join("data").exists(), "nothing created");
    // Opened, but with no certificate for clients to trust: refused too.
    let out = run(&["--dev-open"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--dev-cert"), "{err}");
    assert!(!dir.join("data").exists(), "nothing created");
    let _ = std::fs::remove_dir_all(&dir);
}

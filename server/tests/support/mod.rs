//! What the server's integration tests share: the binary under test, a `weave-console serve`
//! that is killed when dropped, and a fresh temporary directory. (The protocol fixtures are in
//! `simulation::kit`; these spawn a process, so they stay with the server's tests.) Each test
//! file uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_weave-console");

/// A spawned `weave-console serve` and the address it listens on; killed when dropped.
pub struct Server {
    pub child: Child,
    pub addr: String,
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
    let mut command = Command::new(BIN);
    command.arg("serve").args([
        "--public",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../public"),
    ]);
    configure(&mut command);
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{BIN} does not start: {e}"));
    let Some(stdout) = child.stdout.take() else {
        panic!("the server's stdout is piped");
    };
    let mut lines = BufReader::new(stdout).lines();
    let addr = loop {
        let line = match lines.next() {
            Some(Ok(line)) => line,
            other => panic!("the server exited before listening: {other:?}"),
        };
        if let Some(a) = line
            .split("listening on http://")
            .nth(1)
            .or_else(|| line.split("listening on https://").nth(1))
        {
            break a.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Server { child, addr }
}

/// `POST /api/commands` with `body` over a minimal HTTP/1.1 client (the tests need no HTTP
/// client dependency): the status and the body.
pub fn post(addr: &str, body: &[u8]) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))?;
    write!(
        s,
        "POST /api/commands HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
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

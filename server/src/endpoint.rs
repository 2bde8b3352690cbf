//! Where a server is, as a client reaches it: its `/ws` URL, the HTTP origin beside it and the
//! TLS trust. The demo's Agents (`agents/`), the proxy's upstream (`proxy/`), `scenarios --url`,
//! `bench gateway` and `dev` all speak to a server through it.

use crate::gateway::client::Client;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::sync::Arc;
use std::time::Duration;
use wasm_core::authority::Micros;

/// How long a connection or a request may take before the client gives up.
const PATIENCE: Duration = Duration::from_secs(60);

/// Where the server is: its `/ws` URL, the HTTP origin beside it, and the TLS trust.
#[derive(Clone)]
pub struct Endpoint {
    pub ws: String,
    secure: bool,
    /// `host:port`.
    addr: String,
    host: String,
    /// The path before `/ws` (usually empty).
    prefix: String,
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Endpoint {
    /// `ws://HOST:PORT/ws` or `wss://HOST:PORT/ws`; `certificate` (PEM) is trusted for wss.
    pub fn new(url: &str, certificate: Option<&str>) -> Result<Endpoint, String> {
        let root = match certificate {
            Some(pem) if url.starts_with("wss://") => Some(
                CertificateDer::from_pem_slice(pem.as_bytes())
                    .map_err(|e| format!("the server certificate: {e}"))?,
            ),
            _ => None,
        };
        Endpoint::trusting(url, root)
    }

    /// `ws://…/ws`, or `wss://…/ws` trusting exactly `root` (the server's own certificate,
    /// e.g. its development certificate).
    pub fn trusting(url: &str, root: Option<CertificateDer<'static>>) -> Result<Endpoint, String> {
        let tls = match (url.starts_with("wss://"), root) {
            (true, Some(der)) => Some(crate::gateway::client::tls_trusting(der)?),
            (true, None) => {
                return Err(
                    "wss:// needs the server's certificate: the principals file carries \
                     a development server's, or pass --ca FILE"
                        .into(),
                );
            }
            (false, _) => None,
        };
        Endpoint::with_config(url, tls)
    }

    /// `ws://…/ws`, or `wss://…/ws` with a client TLS configuration already made (the proxy's).
    pub fn with_config(
        url: &str,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<Endpoint, String> {
        let (secure, rest) = if let Some(r) = url.strip_prefix("wss://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("ws://") {
            (false, r)
        } else {
            return Err(format!("--url {url:?} is not a ws:// or wss:// URL"));
        };
        let (addr, path) = rest.split_once('/').unwrap_or((rest, ""));
        let path = format!("/{path}");
        let prefix = path
            .strip_suffix("/ws")
            .ok_or_else(|| format!("--url {url:?} must end in /ws"))?
            .to_owned();
        let host = if let Some(v6) = addr.strip_prefix('[') {
            v6.split(']').next().unwrap_or_default().to_owned()
        } else {
            addr.rsplit_once(':').map_or(addr, |(h, _)| h).to_owned()
        };
        let addr = if addr.contains(':') && !addr.ends_with(']') {
            addr.to_owned()
        } else {
            format!("{addr}:{}", if secure { 443 } else { 80 })
        };
        if secure && tls.is_none() {
            return Err(format!("{url}: wss:// needs a certificate to trust"));
        }
        Ok(Endpoint {
            ws: url.to_owned(),
            secure,
            addr,
            host,
            prefix,
            tls,
        })
    }

    /// One HTTP/1.1 request (`Connection: close`); the status and body.
    pub async fn http(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Result<(u16, Vec<u8>), String> {
        self.http_with(method, path, body, &[]).await
    }

    /// [`Self::http`] with extra headers (a signed read's, `wasm_core::crypto::request`).
    pub async fn http_with(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
        headers: &[(&str, String)],
    ) -> Result<(u16, Vec<u8>), String> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let extra: String = headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}\r\n"))
            .collect();
        let head = format!(
            "{method} {}{path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             {extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.prefix,
            self.addr,
            body.len()
        );
        let mut raw = Vec::new();
        let tcp = tokio::net::TcpStream::connect(&self.addr)
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", self.addr))?;
        let _ = tcp.set_nodelay(true);
        let io = async {
            match &self.tls {
                Some(config) if self.secure => {
                    let name = rustls::pki_types::ServerName::try_from(self.host.clone())
                        .map_err(|e| format!("{}: {e}", self.host))?;
                    let mut s = tokio_rustls::TlsConnector::from(Arc::clone(config))
                        .connect(name, tcp)
                        .await
                        .map_err(|e| format!("TLS: {e}"))?;
                    s.write_all(head.as_bytes())
                        .await
                        .map_err(|e| e.to_string())?;
                    s.write_all(body).await.map_err(|e| e.to_string())?;
                    // A server may end TLS without close_notify; what was read is kept.
                    let _ = s.read_to_end(&mut raw).await;
                }
                _ => {
                    let mut s = tcp;
                    s.write_all(head.as_bytes())
                        .await
                        .map_err(|e| e.to_string())?;
                    s.write_all(body).await.map_err(|e| e.to_string())?;
                    let _ = s.read_to_end(&mut raw).await;
                }
            }
            Ok::<(), String>(())
        };
        tokio::time::timeout(PATIENCE, io)
            .await
            .map_err(|_| format!("{method} {path}: no answer"))??;
        parse_response(&raw).ok_or_else(|| format!("{method} {path}: bad response"))
    }

    /// A connected socket (`?principal=human` for a human).
    pub async fn socket(&self, human: bool) -> Result<Client, String> {
        let url = if human {
            format!("{}?principal=human", self.ws)
        } else {
            self.ws.clone()
        };
        tokio::time::timeout(PATIENCE, Client::connect(&url, self.tls.clone()))
            .await
            .map_err(|_| format!("{url}: no answer"))?
    }

    /// [`Endpoint::socket`] from the local address `source` (on loopback, any of 127/8: each
    /// is another client address to the server's per-address bounds).
    pub async fn socket_from(
        &self,
        human: bool,
        source: std::net::IpAddr,
    ) -> Result<Client, String> {
        let url = if human {
            format!("{}?principal=human", self.ws)
        } else {
            self.ws.clone()
        };
        let stream = self.tcp_from(source).await?;
        tokio::time::timeout(
            PATIENCE,
            Client::connect_stream(&url, stream, self.tls.clone()),
        )
        .await
        .map_err(|_| format!("{url}: no answer"))?
    }

    /// A TCP connection to the server from the local address `source`.
    pub async fn tcp_from(
        &self,
        source: std::net::IpAddr,
    ) -> Result<tokio::net::TcpStream, String> {
        let to: std::net::SocketAddr = tokio::net::lookup_host(&self.addr)
            .await
            .map_err(|e| format!("{}: {e}", self.addr))?
            .next()
            .ok_or_else(|| format!("{}: no address", self.addr))?;
        let socket = if to.is_ipv4() {
            tokio::net::TcpSocket::new_v4()
        } else {
            tokio::net::TcpSocket::new_v6()
        }
        .map_err(|e| e.to_string())?;
        socket
            .bind(std::net::SocketAddr::new(source, 0))
            .map_err(|e| format!("bind {source}: {e}"))?;
        tokio::time::timeout(PATIENCE, socket.connect(to))
            .await
            .map_err(|_| format!("{to}: no answer"))?
            .map_err(|e| format!("{to}: {e}"))
    }

    /// The TLS client configuration (`wss://`), and the server's host name.
    pub fn tls(&self) -> (Option<Arc<rustls::ClientConfig>>, &str) {
        (self.tls.clone(), &self.host)
    }

    /// Sets the authority's development clock (`None`: the wall clock).
    pub async fn set_clock(&self, t: Option<Micros>) -> Result<(), String> {
        let body = match t {
            Some(t) => format!("{{\"now\":\"{}\"}}", t.format()),
            None => "{\"now\":null}".to_owned(),
        };
        let (status, answer) = self.http("PUT", "/api/dev/clock", body.as_bytes()).await?;
        if status != 200 {
            return Err(format!(
                "the server has no development clock (PUT /api/dev/clock answered {status}: {}); \
                 start it with `serve --dev-clock`",
                String::from_utf8_lossy(&answer)
            ));
        }
        Ok(())
    }
}

/// Status and body of a whole HTTP/1.1 response (`Content-Length`, chunked, or until close).
pub fn parse_response(raw: &[u8]) -> Option<(u16, Vec<u8>)> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("content-length") {
            length = value.parse::<usize>().ok();
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        let mut out = Vec::new();
        let mut at = rest;
        loop {
            let eol = at.windows(2).position(|w| w == b"\r\n")?;
            let size_text = std::str::from_utf8(&at[..eol]).ok()?;
            let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
            at = &at[eol + 2..];
            if size == 0 {
                break;
            }
            out.extend_from_slice(at.get(..size)?);
            at = at.get(size + 2..)?;
        }
        out
    } else {
        match length {
            Some(n) => rest.get(..n)?.to_vec(),
            None => rest.to_vec(),
        }
    };
    Some((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let e = Endpoint::new("ws://127.0.0.1:9/ws", None).expect("ws");
        assert_eq!(
            (e.addr.as_str(), e.prefix.as_str(), e.secure),
            ("127.0.0.1:9", "", false)
        );
        let e = Endpoint::new("ws://localhost/app/ws", None).expect("prefix");
        assert_eq!(
            (e.addr.as_str(), e.prefix.as_str()),
            ("localhost:80", "/app")
        );
        assert!(
            Endpoint::new("wss://127.0.0.1:9/ws", None).is_err(),
            "wss needs a certificate"
        );
        assert!(Endpoint::new("http://127.0.0.1:9/ws", None).is_err());
        assert!(Endpoint::new("ws://127.0.0.1:9/other", None).is_err());
        let e = Endpoint::new("ws://[::1]:9/ws", None).expect("v6");
        assert_eq!((e.addr.as_str(), e.host.as_str()), ("[::1]:9", "::1"));
    }
}

//! TLS 1.3 only (§17.1: `wss`), with rustls on ring. A deployment gives `--tls-cert` and
//! `--tls-key`; otherwise a self-signed development certificate is generated under the data
//! directory on first run (rcgen) and its SHA-256 fingerprint printed, so a client can pin it.
//! Loopback addresses serve plain HTTP and `ws://` unless `--tls` is given (browsers treat
//! localhost as a secure context).

use super::listen::ListenLimits;
use axum::Router;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A server TLS configuration and the DER of its leaf certificate.
pub struct TlsSetup {
    pub config: Arc<rustls::ServerConfig>,
    pub leaf: CertificateDer<'static>,
}

/// The SHA-256 fingerprint of a certificate, as `AB:CD:…`.
pub fn fingerprint(der: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The ring provider, TLS 1.3 only. ALPN offers HTTP/2 first, then HTTP/1.1: a browser fetches
/// the console's files over one multiplexed HTTP/2 connection (a view's loader asks for up to
/// 45 wasm chunks at once, which HTTP/1.1 would queue six at a time), and opens the WebSocket
/// (§17.1, an HTTP/1.1 upgrade: this server does not offer RFC 8441's extended CONNECT) on a
/// connection of its own with `http/1.1`; an Agent that offers no ALPN gets HTTP/1.1.
pub fn server_config(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<TlsSetup, String> {
    let leaf = certs
        .first()
        .cloned()
        .ok_or("the certificate file has no certificate")?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .map_err(|e| format!("TLS: {e}"))?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| format!("TLS: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsSetup {
        config: Arc::new(config),
        leaf,
    })
}

/// Reads a PEM certificate chain and private key.
pub fn from_files(cert: &Path, key: &Path) -> Result<TlsSetup, String> {
    let certs = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("{}: {e}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    server_config(certs, key)
}

/// The development certificate under `data_dir/tls/` (created on first run, for
/// `localhost`, the loopback addresses and `host`), and whether it was just created.
pub fn development(data_dir: &Path, host: &str) -> Result<(TlsSetup, PathBuf, bool), String> {
    let dir = data_dir.join("tls");
    let cert = dir.join("dev-cert.pem");
    let key = dir.join("dev-key.pem");
    let mut created = false;
    if !cert.is_file() || !key.is_file() {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut names = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ];
        if !names.iter().any(|n| n == host) && !host.is_empty() {
            names.push(host.to_owned());
        }
        let ck = rcgen::generate_simple_self_signed(names)
            .map_err(|e| format!("cannot generate a development certificate: {e}"))?;
        std::fs::write(&cert, ck.cert.pem()).map_err(|e| format!("{}: {e}", cert.display()))?;
        crate::devorg::write_key_file(&key, ck.signing_key.serialize_pem().as_bytes())?;
        created = true;
    }
    Ok((from_files(&cert, &key)?, cert, created))
}

/// Whether `addr` is a loopback address (plain HTTP by default there).
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Serves `app` on `listener` (plain, or TLS with `tls`) until `shutdown` resolves, within
/// the default bounds of `listen` (connection caps, header read and idle timeouts).
#[cfg_attr(not(test), allow(dead_code))]
pub async fn serve(
    listener: std::net::TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    serve_limited(listener, app, tls, ListenLimits::default(), shutdown).await
}

/// [`serve`] within `limits` (`serve --max-connections …`).
pub async fn serve_limited(
    listener: std::net::TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: ListenLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    super::listen::serve(listener, app, tls, limits, shutdown).await
}

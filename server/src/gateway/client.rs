//! A reusable client of the binding (tokio-tungstenite over rustls, TLS 1.3): the Agent and
//! human `HELLO`, and frame I/O. The tests, the demo's Agents (`agents::link`),
//! `scenarios --url` and `bench gateway` use it. Keys stay in the caller's `Signer`; only
//! signatures leave it.

use rustls::pki_types::CertificateDer;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};
use wasm_core::crypto::ed25519::Signer;
use wasm_core::encoding::{b64url_decode, b64url_encode};
use wasm_core::json::{self, Object, Value};

use futures_util::{SinkExt, StreamExt};

pub type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// What came back on the socket.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// A text frame, strictly parsed.
    Frame(Value),
    /// The server closed the connection (or it dropped).
    Closed,
}

/// A connected socket and, after `hello`, its session.
pub struct Client {
    pub socket: Socket,
    pub session_epoch: Option<u64>,
    counter: u64,
}

/// The socket configuration: the library's bounds, with a read buffer sized for frames of
/// about 1 KB (`gateway::READ_BUFFER`; it grows for larger ones).
fn config() -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(crate::gateway::READ_BUFFER)
}

/// A client TLS configuration trusting exactly `root` (a pinned development certificate),
/// TLS 1.3 only.
pub fn tls_trusting(root: CertificateDer<'static>) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root).map_err(|e| format!("TLS root: {e}"))?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .map_err(|e| format!("TLS: {e}"))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(config))
}

/// A client TLS configuration that accepts exactly the end-entity certificate `leaf`, whatever
/// name it carries and whoever issued it, TLS 1.3 only: a server connecting to itself over
/// loopback (its demo Agents), where the certificate is its own. With `--tls-cert` a CA-issued
/// chain names the public host, not `127.0.0.1`, and its leaf is no trust anchor, so
/// [`tls_trusting`] would refuse it; pinning the leaf is stricter than a CA (one certificate,
/// not any the CA signs), and the handshake signature is still checked against its key.
pub fn tls_pinned(leaf: CertificateDer<'static>) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(PinnedLeaf {
        leaf,
        algorithms: provider.signature_verification_algorithms,
    });
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// See [`tls_pinned`].
#[derive(Debug)]
struct PinnedLeaf {
    leaf: CertificateDer<'static>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl rustls::client::danger::ServerCertVerifier for PinnedLeaf {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.leaf.as_ref() {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        // The configuration speaks TLS 1.3 only.
        Err(rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::Tls12NotOffered,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

impl Client {
    /// Opens `url` (`ws://…/ws` or `wss://…/ws`, with `?principal=human` for a human).
    pub async fn connect(
        url: &str,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<Client, String> {
        let connector = tls.map(Connector::Rustls);
        let (socket, _) =
            tokio_tungstenite::connect_async_tls_with_config(url, Some(config()), true, connector)
                .await
                .map_err(|e| format!("cannot connect to {url}: {e}"))?;
        Ok(Client {
            socket,
            session_epoch: None,
            counter: 0,
        })
    }

    /// [`Client::connect`] over a TCP stream the caller set up (socket options, tests).
    pub async fn connect_stream(
        url: &str,
        stream: TcpStream,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<Client, String> {
        let connector = tls.map(Connector::Rustls);
        let (socket, _) =
            tokio_tungstenite::client_async_tls_with_config(url, stream, Some(config()), connector)
                .await
                .map_err(|e| format!("cannot connect to {url}: {e}"))?;
        Ok(Client {
            socket,
            session_epoch: None,
            counter: 0,
        })
    }

    /// A fresh frame id for this client.
    pub fn frame_id(&mut self) -> String {
        self.counter += 1;
        format!("urn:missionweaveprotocol:frame:client:{}", self.counter)
    }

    pub async fn send_text(&mut self, text: String) -> Result<(), String> {
        self.socket
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| e.to_string())
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) -> Result<(), String> {
        self.socket
            .send(Message::Binary(bytes.into()))
            .await
            .map_err(|e| e.to_string())
    }

    pub async fn send(&mut self, frame: &Value) -> Result<(), String> {
        self.send_text(json::to_string(frame)).await
    }

    /// The next frame (WebSocket pings are answered by the library).
    pub async fn next(&mut self) -> Result<Incoming, String> {
        loop {
            match self.socket.next().await {
                Some(Ok(Message::Text(t))) => {
                    return json::parse(t.as_bytes())
                        .map(Incoming::Frame)
                        .map_err(|e| format!("the server sent invalid JSON: {e}"));
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return Ok(Incoming::Closed),
                Some(Ok(_)) => continue,
            }
        }
    }

    /// The next text frame as received, unparsed and uncopied (`None`: closed), for readers
    /// that time arrivals or only look for their own frames.
    pub async fn next_text(&mut self) -> Result<Option<Utf8Bytes>, String> {
        loop {
            match self.socket.next().await {
                Some(Ok(Message::Text(t))) => return Ok(Some(t)),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return Ok(None),
                Some(Ok(_)) => continue,
            }
        }
    }

    /// The next frame, which must be one.
    pub async fn frame(&mut self) -> Result<Value, String> {
        match self.next().await? {
            Incoming::Frame(v) => Ok(v),
            Incoming::Closed => Err("the connection closed".into()),
        }
    }

    /// `HELLO/client_init`.
    pub fn client_init(&mut self, principal_id: &str, key_id: &str, nonce: &[u8]) -> Value {
        let mut o = frame_base(&self.frame_id(), "HELLO");
        o.insert("phase", Value::string("client_init"));
        o.insert("agentId", Value::string(principal_id.to_owned()));
        o.insert("keyId", Value::string(key_id.to_owned()));
        o.insert("clientNonce", Value::string(b64url_encode(nonce)));
        o.insert(
            "supportedVersions",
            Value::Array(vec![Value::string("0.1")]),
        );
        Value::Object(o)
    }

    /// `HELLO/client_response` signing exactly the decoded `challenge` bytes.
    pub fn client_response(
        &mut self,
        init: &Value,
        challenge: &Value,
        signer: &Signer,
    ) -> Result<Value, String> {
        let s = |v: &Value, p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("the HELLO frame has no {p}"))
        };
        let transcript = b64url_decode(&s(challenge, "/challenge")?)
            .map_err(|_| "the challenge is not base64url".to_owned())?;
        let signature = signer.sign(&transcript);
        let mut o = frame_base(&self.frame_id(), "HELLO");
        o.insert("phase", Value::string("client_response"));
        o.insert("agentId", Value::string(s(init, "/agentId")?));
        o.insert("keyId", Value::string(s(init, "/keyId")?));
        o.insert("clientNonce", Value::string(s(init, "/clientNonce")?));
        o.insert("serverNonce", Value::string(s(challenge, "/serverNonce")?));
        o.insert(
            "challengeSignature",
            Value::string(b64url_encode(&signature)),
        );
        Ok(Value::Object(o))
    }

    /// The whole handshake; returns the `server_accept` frame (or the `ERROR` that ended it).
    pub async fn hello(
        &mut self,
        principal_id: &str,
        key_id: &str,
        signer: &Signer,
    ) -> Result<Value, Value> {
        let init = self.client_init(principal_id, key_id, &crate::gateway::random::<16>());
        let err = |m: String| Value::string(m);
        self.send(&init).await.map_err(err)?;
        let challenge = self.frame().await.map_err(err)?;
        if challenge.pointer("/phase").and_then(Value::as_str) != Some("server_challenge") {
            return Err(challenge);
        }
        let response = self
            .client_response(&init, &challenge, signer)
            .map_err(err)?;
        self.send(&response).await.map_err(err)?;
        let accept = self.frame().await.map_err(err)?;
        if accept.pointer("/phase").and_then(Value::as_str) != Some("server_accept") {
            return Err(accept);
        }
        self.session_epoch = match accept.pointer("/sessionEpoch") {
            Some(Value::Number(n)) => n.as_safe_u64(),
            _ => None,
        };
        Ok(accept)
    }

    /// A `SUBSCRIBE` of `(groupId, afterSequence)` pairs.
    pub fn subscribe_frame(&mut self, groups: &[(&str, u64)]) -> Value {
        let mut o = frame_base(&self.frame_id(), "SUBSCRIBE");
        o.insert(
            "subscriptionId",
            Value::string(format!(
                "urn:missionweaveprotocol:subscription:client:{}",
                self.counter
            )),
        );
        o.insert(
            "groups",
            Value::Array(
                groups
                    .iter()
                    .map(|(g, after)| {
                        let mut s = Object::new();
                        s.insert("groupId", Value::string((*g).to_owned()));
                        s.insert("afterSequence", Value::from(*after));
                        Value::Object(s)
                    })
                    .collect(),
            ),
        );
        Value::Object(o)
    }

    /// A `COMMAND` around signed Command bytes.
    pub fn command_frame(&mut self, command: &[u8]) -> Result<Value, String> {
        let c = json::parse(command).map_err(|e| e.to_string())?;
        let mut o = frame_base(&self.frame_id(), "COMMAND");
        o.insert("command", c);
        Ok(Value::Object(o))
    }

    /// An `ACK` of `(groupId, sequence)` Cursors.
    pub fn ack_frame(&mut self, cursors: &[(&str, u64)], sent_at: &str) -> Value {
        let mut o = frame_base(&self.frame_id(), "ACK");
        o.insert(
            "acknowledgements",
            Value::Array(
                cursors
                    .iter()
                    .map(|(g, s)| {
                        let mut a = Object::new();
                        a.insert("groupId", Value::string((*g).to_owned()));
                        a.insert("sequence", Value::from(*s));
                        Value::Object(a)
                    })
                    .collect(),
            ),
        );
        o.insert("sentAt", Value::string(sent_at.to_owned()));
        Value::Object(o)
    }

    /// A `PING` with `nonce`, optionally carrying a Presence Record.
    pub fn ping_frame(&mut self, nonce: &[u8], sent_at: &str, presence: Option<Value>) -> Value {
        let mut o = frame_base(&self.frame_id(), "PING");
        o.insert("nonce", Value::string(b64url_encode(nonce)));
        o.insert("sentAt", Value::string(sent_at.to_owned()));
        if let Some(p) = presence {
            o.insert("presence", p);
        }
        Value::Object(o)
    }
}

fn frame_base(frame_id: &str, frame_type: &str) -> Object {
    let mut o = Object::new();
    o.insert("protocolVersion", Value::string("0.1"));
    o.insert("frameId", Value::string(frame_id.to_owned()));
    o.insert("frameType", Value::string(frame_type.to_owned()));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CA and a leaf it issued for `console.acme.test` (not for `127.0.0.1`), as an operator's
    /// `--tls-cert` chain would be: `(chain, leaf key)`.
    fn ca_issued() -> (
        Vec<CertificateDer<'static>>,
        rustls::pki_types::PrivateKeyDer<'static>,
    ) {
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).expect("CA");
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let leaf_key = rcgen::KeyPair::generate().expect("leaf key");
        let leaf = rcgen::CertificateParams::new(vec!["console.acme.test".to_owned()])
            .expect("leaf params")
            .signed_by(&leaf_key, &issuer)
            .expect("leaf");
        let key =
            rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).expect("key der");
        (vec![leaf.der().clone(), ca_cert.der().clone()], key)
    }

    /// Completes a TLS handshake with a server presenting `chain`, as `127.0.0.1`.
    async fn handshake(
        chain: Vec<CertificateDer<'static>>,
        key: rustls::pki_types::PrivateKeyDer<'static>,
        client: Arc<rustls::ClientConfig>,
    ) -> Result<(), String> {
        let setup = crate::gateway::tls::server_config(chain, key)?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| e.to_string())?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let acceptor = tokio_rustls::TlsAcceptor::from(setup.config);
        let server = tokio::spawn(async move {
            if let Ok((tcp, _)) = listener.accept().await {
                let _ = acceptor.accept(tcp).await;
            }
        });
        let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let name =
            rustls::pki_types::ServerName::try_from("127.0.0.1").map_err(|e| e.to_string())?;
        let out = tokio_rustls::TlsConnector::from(client)
            .connect(name, tcp)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string());
        server.abort();
        out
    }

    /// With a CA-issued `--tls-cert`, the demo's Agents reach their own server over loopback:
    /// trusting the leaf as a root fails (the bug: every demo Agent was refused with
    /// `UnknownIssuer`), pinning it passes, and pinning another certificate fails.
    #[tokio::test]
    async fn the_server_reaches_itself_by_its_pinned_leaf_not_by_trusting_it_as_a_root() {
        let (chain, key) = ca_issued();
        let leaf = chain[0].clone();
        let trusted = tls_trusting(leaf.clone()).expect("config");
        let refused = handshake(chain.clone(), key.clone_key(), trusted).await;
        assert!(refused.is_err(), "a CA-issued leaf is no trust anchor");
        let pinned = tls_pinned(leaf).expect("config");
        handshake(chain.clone(), key.clone_key(), pinned)
            .await
            .expect("the pinned leaf is accepted whatever its name and issuer");
        let (other, _) = ca_issued();
        let wrong = tls_pinned(other[0].clone()).expect("config");
        assert!(
            handshake(chain, key, wrong).await.is_err(),
            "another certificate is refused"
        );
    }
}

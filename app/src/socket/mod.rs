//! The one module that owns the socket (issue 13): a sans-IO [`machine::Machine`], a
//! [`Driver`] that performs its outputs through a [`Transport`] (a browser WebSocket in the
//! console, a recording fake in the native tests), and the browser transport (`browser`,
//! wasm32 only).

pub mod backlog;
#[cfg(target_arch = "wasm32")]
pub mod browser;
pub mod machine;
pub mod page;

use machine::{EventCheck, Input, Machine, Output};
use wasm_core::crypto::DocumentKind;
use wasm_core::crypto::registry::ValidatedRegistry;
use wasm_core::json::Value;
use wasm_core::model::error::ErrorCode;

/// Where frames go: the WebSocket itself, behind a trait so the client runs without a browser.
pub trait Transport {
    /// Opens the connection; the driver is then fed `Opened` or `Closed`.
    fn open(&mut self);
    fn send(&mut self, text: &str);
    fn close(&mut self);
}

/// Signs the `HELLO` challenge with the identity's key (the key never leaves its holder; only
/// the signature does).
pub trait ChallengeSigner {
    fn sign_challenge(&self, bytes: &[u8]) -> Option<[u8; 64]>;
}

impl ChallengeSigner for wasm_core::crypto::ed25519::Signer {
    fn sign_challenge(&self, bytes: &[u8]) -> Option<[u8; 64]> {
        Some(self.sign(bytes))
    }
}

/// No key unlocked: a challenge cannot be answered (the connection is closed and retried).
pub struct NoSigner;

impl ChallengeSigner for NoSigner {
    fn sign_challenge(&self, _: &[u8]) -> Option<[u8; 64]> {
        None
    }
}

/// Verifies each Event against the Registry fetched from the server (`GET /api/registry`):
/// the Group Authority's signature and its key's validity at the Event's `occurredAt`, all
/// six stages of §6.4 with `DocumentKind::Event`. Without a Registry nothing verifies (fail
/// closed).
#[derive(Clone, Debug, Default)]
pub struct RegistryCheck {
    pub registry: Option<ValidatedRegistry>,
}

impl EventCheck for RegistryCheck {
    fn check(&self, event: &Value) -> Result<String, (ErrorCode, String)> {
        let Some(registry) = &self.registry else {
            return Err((
                ErrorCode::AuthInvalidSignature,
                "no Registry evidence: the Event cannot be verified".into(),
            ));
        };
        wasm_core::crypto::verify::verify_value(event.clone(), DocumentKind::Event, registry)
            .map(|v| v.signing_hash)
            .map_err(|e| (e.wire_code(), e.to_string()))
    }
}

/// Runs the machine's outputs: transport actions are performed here, a challenge is signed at
/// once, and what the UI must show is returned.
pub struct Driver<T: Transport> {
    pub machine: Machine,
    pub transport: T,
}

impl<T: Transport> Driver<T> {
    /// A driver over `transport`; `seed` seeds the backoff jitter.
    pub fn new(transport: T, seed: u64) -> Driver<T> {
        Driver {
            machine: Machine::new(seed),
            transport,
        }
    }

    /// Feeds `input` at `now_ms`; returns the notices for the UI (deliveries, rejections, gaps,
    /// status changes, server errors).
    pub fn handle(
        &mut self,
        now_ms: u64,
        input: Input,
        check: &dyn EventCheck,
        signer: &dyn ChallengeSigner,
    ) -> Vec<Output> {
        let mut pending = vec![input];
        let mut notices = Vec::new();
        while let Some(input) = pending.pop() {
            for o in self.machine.handle(now_ms, input, check) {
                match o {
                    Output::Open => self.transport.open(),
                    Output::Send(text) => self.transport.send(&text),
                    Output::Close => self.transport.close(),
                    Output::SignChallenge(bytes) => match signer.sign_challenge(&bytes) {
                        Some(sig) => pending.push(Input::ChallengeSigned(sig)),
                        None => {
                            self.transport.close();
                            pending.push(Input::Closed);
                        }
                    },
                    other => notices.push(other),
                }
            }
        }
        notices
    }
}

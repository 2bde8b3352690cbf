//! The node as the static demo's Web Worker module (wasm32, wasm-bindgen): `demo-worker.js`
//! owns the clock (a paced virtual time) and the page's messages; this holds the node. Texts in
//! and out, so the page and the Worker exchange strings with `postMessage` (docs/static-demo.md).

use crate::{DemoHuman, HumanGate, Node, NodeConfig, Pace};
use wasm_bindgen::prelude::{JsValue, wasm_bindgen};
use wasm_core::authority::Micros;
use wasm_core::json::{self, Object, Value};

/// Milliseconds since the epoch (JavaScript's clock) as the node's time.
fn micros(ms: f64) -> Micros {
    // Finite and in range, or the epoch: a NaN from the page moves nothing (the node's clock
    // never goes back).
    if ms.is_finite() && ms.abs() < 1e15 {
        Micros((ms * 1000.0) as i64)
    } else {
        Micros(0)
    }
}

/// A key document as the page serves it: `{principalId, keyId, seed, <marker>: true}`, the
/// seed in base64url. The marker (`demo` for the demo key, `readOnly` for the visitor key) is
/// what the console checks before it takes the document as that kind of key
/// (`custody::demo`, docs/static-demo.md "Keys"), so both documents are built here alike.
fn key_document(key: DemoHuman, marker: &'static str) -> String {
    let mut o = Object::new();
    o.insert("principalId", Value::string(key.principal_id));
    o.insert("keyId", Value::string(key.key_id));
    o.insert("seed", Value::string(key.seed.to_b64url().to_string()));
    o.insert(marker, Value::Bool(true));
    json::to_string(&Value::Object(o))
}

/// The node behind the Worker's messages.
#[wasm_bindgen]
pub struct DemoNode {
    node: Node,
}

#[wasm_bindgen]
impl DemoNode {
    /// A new Organization and demo from 32 bytes of the page's randomness, starting at
    /// `now_ms`; `brisk` uses the demo's short pace (`Pace::brisk`) rather than the default.
    #[wasm_bindgen(constructor)]
    pub fn new(entropy: &[u8], now_ms: f64, brisk: bool) -> Result<DemoNode, JsValue> {
        let entropy: [u8; 32] = entropy
            .try_into()
            .map_err(|_| JsValue::from_str("the entropy must be 32 bytes"))?;
        let node = Node::new(NodeConfig {
            entropy,
            start: crate::whole_seconds(micros(now_ms)),
            pace: if brisk {
                Pace::brisk()
            } else {
                Pace::default()
            },
            duplicate_every: 7,
        })
        .map_err(|e| JsValue::from_str(&e))?;
        Ok(DemoNode { node })
    }

    /// Runs the demo at `now_ms`.
    pub fn tick(&mut self, now_ms: f64) {
        self.node.tick(micros(now_ms));
    }

    /// When the demo next wants a tick (milliseconds), if it waits for time at all.
    pub fn next_wake_ms(&self) -> Option<f64> {
        self.node.next_wake().map(|t| t.0 as f64 / 1000.0)
    }

    /// Opens a human connection; `None` past the node's bound.
    pub fn connect(&mut self) -> Option<u32> {
        self.node.connect().and_then(|c| u32::try_from(c).ok())
    }

    /// One text from the page's connection `conn`.
    pub fn receive(&mut self, conn: u32, text: &str, now_ms: f64) {
        self.node.receive(u64::from(conn), text, micros(now_ms));
    }

    pub fn disconnect(&mut self, conn: u32) {
        self.node.disconnect(u64::from(conn));
    }

    pub fn is_closed(&self, conn: u32) -> bool {
        self.node.is_closed(u64::from(conn))
    }

    /// The frames to send: a JSON array of `[conn, frameText]`.
    pub fn take_frames(&mut self) -> String {
        let frames = self
            .node
            .take_frames()
            .into_iter()
            .map(|(c, f)| Value::Array(vec![Value::from(c), Value::string(f)]))
            .collect();
        json::to_string(&Value::Array(frames))
    }

    /// `POST /api/commands` with `body`: `{"status": <HTTP status>, "body": <answer text>}`.
    pub fn post_command(&mut self, body: &str, now_ms: f64) -> String {
        let (status, answer) = self.node.post_command(body.as_bytes(), micros(now_ms));
        let mut o = Object::new();
        o.insert("status", Value::from(u64::from(status)));
        o.insert("body", Value::string(answer));
        json::to_string(&Value::Object(o))
    }

    /// `GET /api/artifacts/{hash}`: `{"mediaType", "content"}` (base64url), if the node keeps
    /// that content.
    pub fn artifact_json(&self, content_hash: &str) -> Option<String> {
        let (media_type, bytes) = self.node.artifact(content_hash)?;
        let mut o = Object::new();
        o.insert("mediaType", Value::string(media_type.to_owned()));
        o.insert(
            "content",
            Value::string(wasm_core::encoding::b64url_encode(bytes)),
        );
        Some(json::to_string(&Value::Object(o)))
    }

    /// `GET /api/registry`'s body.
    pub fn registry_json(&self) -> String {
        self.node.registry_json()
    }

    /// `GET /api/registry/agent-cards`'s body: the Agents' signed Agent Cards.
    pub fn agent_cards_json(&self) -> String {
        self.node.agent_cards_json()
    }

    /// `GET /api/groups/{principal}`'s body, `{"groups": [...]}`: the Groups `principal` may
    /// read now (an active Membership, or an owner up the Mission tree).
    pub fn groups_json(&self, principal: &str) -> String {
        let groups = self
            .node
            .groups_of(principal)
            .into_iter()
            .map(Value::string)
            .collect();
        let mut o = Object::new();
        o.insert("groups", Value::Array(groups));
        json::to_string(&Value::Object(o))
    }

    /// The one-click demo key: `{principalId, keyId, seed}` (base64url). It is a demonstration
    /// key generated in this page, never a real one (docs/static-demo.md, "Keys").
    pub fn demo_key_json(&self) -> String {
        key_document(self.node.demo_human(), "demo")
    }

    /// The visitor key (`GET /api/demo/visitor`): `{principalId, keyId, seed, readOnly: true}`,
    /// the seed encoded as [`DemoNode::demo_key_json`] encodes it. A session opened with it
    /// reads the demo as the human does and can send no Command (docs/static-demo.md,
    /// "Visitor view"); the Organization's Registry does not bind it.
    pub fn visitor_key_json(&self) -> String {
        key_document(self.node.visitor(), "readOnly")
    }

    /// The human decisions waited for: `[{key, description, kind, missionId, groupId, …}]`,
    /// with the WorkItem's goal or the Mission's title a visitor sees before signing in, and
    /// what a decision's Command names.
    pub fn gates_json(&self) -> String {
        let s = |v: &str| Value::string(v.to_owned());
        let strings = |v: &[String]| Value::Array(v.iter().map(|x| s(x)).collect());
        let gates = self
            .node
            .gates()
            .iter()
            .map(|g| {
                let mut o = Object::new();
                o.insert("key", Value::string(g.key()));
                o.insert("description", Value::string(g.describe()));
                match g {
                    HumanGate::ExecutionApproval {
                        mission_id,
                        group_id,
                        work_item_id,
                        goal,
                        ownership_epoch,
                        operations,
                    } => {
                        o.insert("kind", s("execution"));
                        o.insert("missionId", s(mission_id));
                        o.insert("groupId", s(group_id));
                        o.insert("workItemId", s(work_item_id));
                        o.insert("goal", s(goal));
                        o.insert("ownershipEpoch", Value::from(*ownership_epoch));
                        o.insert("operations", strings(operations));
                    }
                    HumanGate::MissionApproval {
                        mission_id,
                        group_id,
                        title,
                        revision,
                        artifact_hashes,
                    } => {
                        o.insert("kind", s("mission"));
                        o.insert("missionId", s(mission_id));
                        o.insert("groupId", s(group_id));
                        o.insert("title", s(title));
                        o.insert("revision", Value::from(*revision));
                        o.insert("artifactHashes", strings(artifact_hashes));
                    }
                }
                Value::Object(o)
            })
            .collect();
        json::to_string(&Value::Array(gates))
    }

    /// The demo's progress lines since the last call, newline-separated.
    pub fn take_lines(&mut self) -> String {
        self.node.take_lines().join("\n")
    }

    /// The module's linear memory in bytes (it only grows): the authority's, the log's and the
    /// Agents' heap together, for the benchmark of the tab's memory.
    pub fn memory_bytes(&self) -> f64 {
        (core::arch::wasm32::memory_size::<0>() as f64) * 65536.0
    }

    pub fn finished(&self) -> bool {
        self.node.finished()
    }
}

//! The signing summary (issue 13): before a person signs a Command, the console shows exactly
//! what the signature covers — its kind, its target, the Mission revision it expects, the
//! Artifact hashes and budget figures it carries — and, on demand, the canonical JSON that is
//! signed (the §6.4 stage-5 bytes: JCS of the Command without `signature`). The summary is
//! computed from the very document that is then signed, so the two cannot differ.

use wasm_core::json::{self, Value};

/// The six budget dimensions (§12 "Resource Budget", `common.schema.json#/$defs/budget`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dimension {
    Financial,
    ModelTokens,
    ToolCalls,
    ComputeSeconds,
    WallClockSeconds,
    ExternalSideEffects,
}

impl Dimension {
    /// The dimension a payload member name measures, by the schemas' prefixes
    /// (`financialLimit`, `modelTokenLimit`, `toolCallLimit`, `computeSecondsLimit`, …).
    pub fn of_member(name: &str) -> Option<Dimension> {
        const PREFIXES: [(&str, Dimension); 6] = [
            ("financial", Dimension::Financial),
            ("modelToken", Dimension::ModelTokens),
            ("toolCall", Dimension::ToolCalls),
            ("computeSeconds", Dimension::ComputeSeconds),
            ("wallClockSeconds", Dimension::WallClockSeconds),
            ("externalSideEffect", Dimension::ExternalSideEffects),
        ];
        PREFIXES
            .iter()
            .find(|(p, _)| name.starts_with(p))
            .map(|(_, d)| *d)
    }
}

/// One budget figure in a Command: where it is, which dimension, the number exactly as it will
/// be signed, and the currency for money.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetFigure {
    pub pointer: String,
    pub member: String,
    pub dimension: Dimension,
    pub number: String,
    pub currency: Option<String>,
}

/// What a signature on this Command covers.
#[derive(Clone, Debug, PartialEq)]
pub struct SigningSummary {
    pub kind: String,
    pub group_id: Option<String>,
    /// The objects the Command acts on: (member, identifier), envelope first, then payload.
    pub targets: Vec<(String, String)>,
    /// `payload.missionRevision`, else `expectedRevision` of a `mission.*` Command.
    pub mission_revision: Option<u64>,
    /// Every `sha256:` value under a member whose name mentions a hash, in document order.
    pub artifact_hashes: Vec<String>,
    pub budget: Vec<BudgetFigure>,
    /// The exact bytes that are signed, as text.
    pub canonical_json: String,
}

/// Why no summary could be made (then nothing may be signed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryError {
    NotAnObject,
    NoKind,
    /// The document has no canonical form (e.g. a number outside binary64).
    NotCanonical(String),
}

fn u64_of(v: Option<&Value>) -> Option<u64> {
    match v {
        Some(Value::Number(n)) => n.as_safe_u64(),
        _ => None,
    }
}

fn walk(v: &Value, pointer: &str, member: &str, s: &mut SigningSummary) {
    match v {
        Value::Object(o) => {
            let currency = o.get("currency").and_then(Value::as_str).map(str::to_owned);
            for (k, child) in o.iter() {
                let p = format!(
                    "{pointer}/{}",
                    k.as_str().replace('~', "~0").replace('/', "~1")
                );
                if let (Value::Number(n), Some(d)) = (child, Dimension::of_member(k.as_str())) {
                    s.budget.push(BudgetFigure {
                        pointer: p.clone(),
                        member: k.as_str().to_owned(),
                        dimension: d,
                        number: n.as_lexical().to_owned(),
                        currency: (d == Dimension::Financial)
                            .then(|| currency.clone())
                            .flatten(),
                    });
                }
                walk(child, &p, k.as_str(), s);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                walk(child, &format!("{pointer}/{i}"), member, s);
            }
        }
        Value::String(text) => {
            let t = text.as_str();
            if member.to_ascii_lowercase().contains("hash")
                && wasm_core::encoding::is_sha256_hash(t)
                && member != "commandHash"
                && !s.artifact_hashes.iter().any(|h| h == t)
            {
                s.artifact_hashes.push(t.to_owned());
            }
        }
        _ => {}
    }
}

/// Builds the summary of an unsigned (or signed) Command document.
pub fn summarize(command: &Value) -> Result<SigningSummary, SummaryError> {
    let Value::Object(o) = command else {
        return Err(SummaryError::NotAnObject);
    };
    let kind = o
        .get("kind")
        .and_then(Value::as_str)
        .ok_or(SummaryError::NoKind)?
        .to_owned();
    let canonical = json::canonicalize_without(command, "signature")
        .map_err(|e| SummaryError::NotCanonical(e.to_string()))?;
    let canonical_json =
        String::from_utf8(canonical).map_err(|e| SummaryError::NotCanonical(e.to_string()))?;
    let mut s = SigningSummary {
        group_id: o.get("groupId").and_then(Value::as_str).map(str::to_owned),
        targets: Vec::new(),
        mission_revision: None,
        artifact_hashes: Vec::new(),
        budget: Vec::new(),
        canonical_json,
        kind,
    };
    for m in ["workItemId", "conversationId"] {
        if let Some(id) = o.get(m).and_then(Value::as_str) {
            s.targets.push((m.to_owned(), id.to_owned()));
        }
    }
    let payload = o.get("payload");
    if let Some(Value::Object(p)) = payload {
        for (k, v) in p.iter() {
            let k = k.as_str();
            if k.ends_with("Id")
                && let Some(id) = v.as_str()
                && !s.targets.iter().any(|(m, i)| m == k && i == id)
            {
                s.targets.push((k.to_owned(), id.to_owned()));
            }
        }
    }
    s.mission_revision =
        u64_of(payload.and_then(|p| p.pointer("/missionRevision"))).or_else(|| {
            s.kind
                .starts_with("mission.")
                .then(|| u64_of(o.get("expectedRevision")))
                .flatten()
        });
    if let Some(p) = payload {
        walk(p, "/payload", "payload", &mut s);
    }
    Ok(s)
}

//! Schema file name → typed validator, for the structural bundle and the differential test.

use super::*;
use crate::json::Value;

/// A schema's typed validator: parse as its root type with the given timestamp rule, discard.
pub type Validator = fn(&Value, bool) -> Result<(), SchemaError>;

/// The typed validator for a normative schema file (`schemas/<name>.schema.json`), by file
/// name. `common.schema.json` has no root type and so no validator.
pub fn validator_for(schema_file: &str) -> Option<Validator> {
    let name = schema_file.rsplit('/').next().unwrap_or(schema_file);
    Some(match name {
        "agent-card.schema.json" => agent_card::validate,
        "approval.schema.json" => approval::validate,
        "artifact.schema.json" => artifact::validate,
        "command.schema.json" => command::validate,
        "context-package.schema.json" => context_package::validate,
        "conversation.schema.json" => conversation::validate,
        "error.schema.json" => error::validate,
        "event.schema.json" => event::validate,
        "evidence.schema.json" => evidence::validate,
        "extension-profile.schema.json" => extension_profile::validate,
        "first-admission-record.schema.json" => first_admission_record::validate,
        "group.schema.json" => group::validate,
        "group-snapshot.schema.json" => group_snapshot::validate,
        "lease.schema.json" => lease::validate,
        "membership.schema.json" => membership::validate,
        "message.schema.json" => message::validate,
        "mission.schema.json" => mission::validate,
        "presence-record.schema.json" => presence_record::validate,
        "websocket-frame.schema.json" => crate::frame::validate,
        "work-contract.schema.json" => work_contract::validate,
        "work-item.schema.json" => work_item::validate,
        _ => return None,
    })
}

/// Whether a schema describes a Signed Document (its timestamps follow the §2 profile).
pub fn is_signed_document_schema(schema_file: &str) -> bool {
    let name = schema_file.rsplit('/').next().unwrap_or(schema_file);
    crate::crypto::DocumentKind::ALL
        .iter()
        .any(|k| k.schema_file().ends_with(name))
        || name == "first-admission-record.schema.json"
}

/// The drift check (D-1): every official document, and thousands of mutations of it, must get
/// the same accept/reject verdict from our typed models as from a Draft 2020-12 validator
/// (`boon`, format assertions on) reading the real schemas from the bundle.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod differential {
    use super::validator_for;
    use crate::json::{self, Value};
    use crate::model::command::oracle::Oracle;
    use crate::model::primitives::testkit::protocol_dir;

    /// Every way we perturb one document: drop or add members, swap leaf types and values,
    /// empty or repeat arrays.
    fn mutations(v: &Value) -> Vec<Value> {
        let mut out = Vec::new();
        let replacements: Vec<Value> = [
            "null",
            "true",
            "0",
            "-1",
            "1.5",
            "9007199254740992",
            "\"\"",
            "\"x\"",
            "[]",
            "{}",
            "\"urn:x:y\"",
            "\"not a uri\"",
            "\"2026-07-15T00:00:00Z\"",
            "\"0.1\"",
            "\"agent\"",
            "\"service\"",
            "\"human\"",
            "\"AAAA\"",
            "\"1.0.0\"",
            "\"a.b\"",
            "\"sha256:0000000000000000000000000000000000000000000000000000000000000000\"",
        ]
        .iter()
        .filter_map(|t| json::parse_str(t).ok())
        .collect();
        walk(v, &mut |path, node| {
            match node {
                Value::Object(o) => {
                    for (k, _) in o.iter() {
                        out.push(edit(v, path, |n| {
                            if let Value::Object(o) = n {
                                o.remove(k.as_str());
                            }
                        }));
                    }
                    out.push(edit(v, path, |n| {
                        if let Value::Object(o) = n {
                            o.insert("zzUnknownMember", Value::Bool(true));
                        }
                    }));
                }
                Value::Array(a) => {
                    out.push(edit(v, path, |n| *n = Value::Array(Vec::new())));
                    if let Some(first) = a.first().cloned() {
                        out.push(edit(v, path, |n| {
                            if let Value::Array(a) = n {
                                a.push(first.clone());
                            }
                        }));
                    }
                }
                _ => {}
            }
            if !path.is_empty() {
                for r in &replacements {
                    out.push(edit(v, path, |n| *n = r.clone()));
                }
            }
        });
        out
    }

    fn walk(v: &Value, f: &mut dyn FnMut(&[String], &Value)) {
        fn go(v: &Value, path: &mut Vec<String>, f: &mut dyn FnMut(&[String], &Value)) {
            f(path, v);
            match v {
                Value::Object(o) => {
                    for (k, c) in o.iter() {
                        path.push(k.as_str().to_owned());
                        go(c, path, f);
                        path.pop();
                    }
                }
                Value::Array(a) => {
                    for (i, c) in a.iter().enumerate() {
                        path.push(i.to_string());
                        go(c, path, f);
                        path.pop();
                    }
                }
                _ => {}
            }
        }
        go(v, &mut Vec::new(), f);
    }

    fn edit(v: &Value, path: &[String], f: impl FnOnce(&mut Value)) -> Value {
        let mut copy = v.clone();
        let mut cur = &mut copy;
        for seg in path {
            cur = match cur {
                Value::Object(o) => {
                    let Some(next) = o.get_mut(seg) else {
                        return v.clone();
                    };
                    next
                }
                Value::Array(a) => match seg.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                    Some(next) => next,
                    None => return v.clone(),
                },
                _ => return v.clone(),
            };
        }
        f(cur);
        copy
    }

    fn documents() -> Vec<(String, String, Value)> {
        let root = protocol_dir();
        let mut docs = Vec::new();
        let manifest: Value =
            json::parse(&std::fs::read(root.join("conformance/manifest.json")).expect("manifest"))
                .expect("json");
        if let Value::Array(cases) = manifest {
            for c in cases {
                let schema = c
                    .pointer("/schema")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let inst = c
                    .pointer("/instance")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Ok(v) = json::parse(&std::fs::read(root.join(inst)).expect("instance")) {
                    docs.push((
                        schema.rsplit('/').next().unwrap_or_default().to_owned(),
                        inst.to_owned(),
                        v,
                    ));
                }
            }
        }
        for kind in crate::crypto::DocumentKind::ALL {
            let path = format!(
                "cryptography/vectors/signed-documents/valid/{}.json",
                kind.as_str()
            );
            if let Ok(bytes) = std::fs::read(root.join(&path)) {
                let file = kind
                    .schema_file()
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                docs.push((file, path, json::parse(&bytes).expect("json")));
            }
        }
        docs
    }

    #[test]
    fn typed_models_agree_with_the_json_schemas() {
        let mut oracles: std::collections::BTreeMap<String, Oracle> = Default::default();
        let mut compared = 0usize;
        let mut accepted = 0usize;
        let mut disagreements = Vec::new();
        for (schema, path, doc) in documents() {
            let oracle = oracles
                .entry(schema.clone())
                .or_insert_with(|| Oracle::new(&schema));
            let ours = validator_for(&schema).expect("a typed model for every schema");
            let mut variants = vec![doc.clone()];
            variants.extend(mutations(&doc));
            for v in variants {
                let want = oracle.accepts(&v);
                let got = ours(&v, false);
                compared += 1;
                accepted += usize::from(want);
                if want != got.is_ok() {
                    disagreements.push(format!(
                        "{path} ({schema}): schema says {}, ours says {:?}\n    {}",
                        if want { "valid" } else { "invalid" },
                        got.err().map(|e| e.to_string()),
                        json::to_string(&v).chars().take(400).collect::<String>()
                    ));
                }
            }
        }
        println!(
            "schema differential: {compared} documents compared ({accepted} valid, {} invalid), \
             {} disagreements",
            compared - accepted,
            disagreements.len()
        );
        assert!(compared > 5000, "only {compared} documents compared");
        assert!(
            accepted > 1000 && compared - accepted > 1000,
            "mutations too one-sided"
        );
        assert!(
            disagreements.is_empty(),
            "{} disagreements, first ones:\n{}",
            disagreements.len(),
            disagreements
                .iter()
                .take(15)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

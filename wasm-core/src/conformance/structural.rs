//! The structural bundle: 58 documents, each valid or invalid against one schema (§22).

use super::{BundleReport, CaseError, ReadFile, read_json, str_of};
use crate::json::{self, Value};
use crate::model;

/// Runs `conformance/manifest.json` through the typed models.
pub fn run_structural(read: ReadFile) -> BundleReport {
    let mut report = BundleReport::new("structural");
    let manifest = match read_json(read, "conformance/manifest.json") {
        Ok(m) => m,
        Err(e) => {
            report.integrity(e.to_string());
            return report;
        }
    };
    let Value::Array(cases) = &manifest else {
        report.integrity("conformance/manifest.json is not an array".into());
        return report;
    };
    for case in cases {
        let name = str_of(case, "/name").unwrap_or("?").to_owned();
        let schema = str_of(case, "/schema").unwrap_or_default();
        let instance = str_of(case, "/instance").unwrap_or_default();
        let want_valid = matches!(case.pointer("/valid"), Some(Value::Bool(true)));
        let expected = if want_valid { "valid" } else { "invalid" }.to_owned();
        let got = (|| -> Result<(), CaseError> {
            let validate = model::schemas::validator_for(schema)
                .ok_or_else(|| CaseError::Fixture(format!("no typed model for {schema}")))?;
            let bytes = read(instance).map_err(CaseError::Read)?;
            let outcome = json::parse(&bytes)
                .map_err(|e| format!("PROTOCOL_VIOLATION: {e}"))
                .and_then(|v| {
                    validate(&v, model::schemas::is_signed_document_schema(schema))
                        .map_err(|e| format!("SCHEMA_VALIDATION_FAILED {e}"))
                });
            match (want_valid, outcome) {
                (true, Ok(())) | (false, Err(_)) => Ok(()),
                (true, Err(e)) => Err(CaseError::Mismatch(format!("invalid: {e}"))),
                (false, Ok(())) => Err(CaseError::Mismatch("valid".into())),
            }
        })();
        report.record(format!("{name} ({instance})"), expected, got);
    }
    report
}

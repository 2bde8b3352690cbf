//! The Admission bundle: 5 cases, 30 evaluations of First-Admission and historical replay,
//! driven through a fixture [`AdmissionLog`] built from each evaluation's declared outcomes.

use super::cryptography::load_registry;
use super::{BundleReport, CaseError, ReadFile, check_integrity, read_json, str_of};
use crate::admission::{
    AdmissionLog, AppendOutcome, LookupOutcome, TrustedContext, first_admission, historical_replay,
};
use crate::crypto::{DocumentKind, verify};
use crate::json::{self, Value};
use crate::model::{self, common::Actor};

/// Runs `admission/manifest.json`, after checking its pin of the cryptography bundle.
pub fn run_admission(read: ReadFile) -> BundleReport {
    let mut report = BundleReport::new("admission");
    let manifest = match read_json(read, "admission/manifest.json") {
        Ok(m) => m,
        Err(e) => {
            report.integrity(e.to_string());
            return report;
        }
    };
    check_integrity(read, &manifest, &mut report);
    let pinned = str_of(&manifest, "/cryptography/artifactDigest").unwrap_or_default();
    match read_json(
        read,
        str_of(&manifest, "/cryptography/manifest").unwrap_or_default(),
    ) {
        Ok(crypto) => {
            let actual = str_of(&crypto, "/artifactDigest").unwrap_or_default();
            if actual != pinned {
                report.integrity(format!(
                    "pinned cryptography digest {pinned}, bundle declares {actual}"
                ));
            }
            let mut crypto_report = BundleReport::new("cryptography");
            check_integrity(read, &crypto, &mut crypto_report);
            for f in crypto_report.failures {
                report.integrity(format!("pinned cryptography bundle: {}", f.got));
            }
        }
        Err(e) => report.integrity(e.to_string()),
    }
    let Some(Value::Array(cases)) = manifest.pointer("/cases") else {
        report.integrity("manifest has no cases".into());
        return report;
    };
    for case in cases {
        let case_id = str_of(case, "/id").unwrap_or("?");
        let Some(Value::Array(evals)) = case.pointer("/evaluations") else {
            continue;
        };
        for e in evals {
            let id = str_of(e, "/id").unwrap_or("?");
            let want_stage = str_of(e, "/expect/stage").unwrap_or("?");
            let want_reason = str_of(e, "/expect/reason").unwrap_or("");
            let expected = if want_stage == "complete" {
                "complete".to_owned()
            } else {
                format!(
                    "{want_stage} {} {want_reason}",
                    str_of(e, "/expect/wireCode").unwrap_or("?")
                )
            };
            let got = run_one(read, e);
            report.record(format!("{case_id}/{id}"), expected, got);
        }
    }
    report
}

/// The bundle's deterministic harness metadata as an [`AdmissionLog`].
struct FixtureLog {
    lookup: Option<LookupOutcome>,
    append: Option<AppendOutcome>,
    appended: bool,
}

impl AdmissionLog for FixtureLog {
    fn lookup(&mut self, _org: &str, _hash: &str) -> LookupOutcome {
        self.lookup.take().unwrap_or(LookupOutcome::Indeterminate)
    }

    fn append_or_return_existing(&mut self, _org: &str, _hash: &str, _c: &[u8]) -> AppendOutcome {
        self.appended = true;
        // No declared append outcome means the harness expects none: indeterminate if called.
        self.append.take().unwrap_or(AppendOutcome::Indeterminate)
    }
}

fn service(v: Option<&Value>) -> Result<Actor, CaseError> {
    let v = v.ok_or_else(|| CaseError::Fixture("missing authenticatedService".into()))?;
    model::from_value(v, true).map_err(|e| CaseError::Fixture(e.to_string()))
}

fn lookup_outcome(read: ReadFile, v: &Value) -> Result<LookupOutcome, CaseError> {
    Ok(match str_of(v, "/status").unwrap_or_default() {
        "found" => LookupOutcome::Found {
            record: read(str_of(v, "/record").unwrap_or_default()).map_err(CaseError::Read)?,
            authenticated_service: service(v.pointer("/authenticatedService"))?,
        },
        "authoritative-absence" => LookupOutcome::AuthoritativeAbsence,
        "unauthenticated" => LookupOutcome::Unauthenticated,
        "integrity-failed" => LookupOutcome::IntegrityFailed,
        "unavailable" => LookupOutcome::Unavailable,
        "indeterminate" => LookupOutcome::Indeterminate,
        other => {
            return Err(CaseError::Fixture(format!(
                "unknown lookup status {other:?}"
            )));
        }
    })
}

fn append_outcome(read: ReadFile, v: &Value) -> Result<AppendOutcome, CaseError> {
    let record = || -> Result<(Vec<u8>, Actor), CaseError> {
        Ok((
            read(str_of(v, "/record").unwrap_or_default()).map_err(CaseError::Read)?,
            service(v.pointer("/authenticatedService"))?,
        ))
    };
    Ok(match str_of(v, "/status").unwrap_or_default() {
        "committed" => {
            let (record, authenticated_service) = record()?;
            AppendOutcome::Committed {
                record,
                authenticated_service,
            }
        }
        "existing" => {
            let (record, authenticated_service) = record()?;
            AppendOutcome::Existing {
                record,
                authenticated_service,
            }
        }
        "conflict" => AppendOutcome::Conflict,
        "unauthenticated" => AppendOutcome::Unauthenticated,
        "integrity-failed" => AppendOutcome::IntegrityFailed,
        "unavailable" => AppendOutcome::Unavailable,
        "indeterminate" => AppendOutcome::Indeterminate,
        "commit-failed" => AppendOutcome::CommitFailed,
        other => {
            return Err(CaseError::Fixture(format!(
                "unknown append status {other:?}"
            )));
        }
    })
}

fn run_one(read: ReadFile, e: &Value) -> Result<(), CaseError> {
    let profile = str_of(e, "/profileId").unwrap_or_default();
    let kind = DocumentKind::from_wire(profile)
        .ok_or_else(|| CaseError::Fixture(format!("unknown profile {profile:?}")))?;
    let registry = load_registry(read, str_of(e, "/registry").unwrap_or_default())?;
    let bytes = read(str_of(e, "/document").unwrap_or_default()).map_err(CaseError::Read)?;
    // Every evaluation first reruns the unchanged six stages.
    let verified = verify(&bytes, kind, &registry)
        .map_err(|err| CaseError::Mismatch(format!("six-stage verification failed: {err}")))?;
    let mut log = FixtureLog {
        lookup: match e.pointer("/lookup") {
            Some(v @ Value::Object(_)) => Some(lookup_outcome(read, v)?),
            _ => None,
        },
        append: match e.pointer("/append") {
            Some(v @ Value::Object(_)) => Some(append_outcome(read, v)?),
            _ => None,
        },
        appended: false,
    };
    let declared_append = log.append.is_some();
    let trusted = e.pointer("/trustedContext").filter(|v| **v != Value::Null);
    let outcome = match str_of(e, "/mode").unwrap_or_default() {
        "first-admission" => {
            let t = trusted.cloned();
            let mut ctx = || TrustedContext {
                admission_record_id: t
                    .as_ref()
                    .and_then(|t| str_of(t, "/admissionRecordId"))
                    .unwrap_or_default()
                    .to_owned(),
                trusted_accepted_at: t
                    .as_ref()
                    .and_then(|t| str_of(t, "/trustedAcceptedAt"))
                    .unwrap_or_default()
                    .to_owned(),
                accepted_by: service(t.as_ref().and_then(|t| t.pointer("/acceptedBy")))
                    .unwrap_or_else(|_| Actor::new(model::common::ActorType::Service, "")),
            };
            first_admission(&verified, &mut log, &mut ctx)
        }
        "historical-replay" => historical_replay(&verified, &mut log),
        other => return Err(CaseError::Fixture(format!("unknown mode {other:?}"))),
    };
    if log.appended && !declared_append {
        return Err(CaseError::Mismatch(
            "appended although the evaluation declares no append".into(),
        ));
    }
    match (str_of(e, "/expect/stage").unwrap_or_default(), outcome) {
        ("complete", Ok(admitted)) => {
            let want = read_json(read, str_of(e, "/expect/record").unwrap_or_default())?;
            if admitted.record == want {
                Ok(())
            } else {
                Err(CaseError::Mismatch(format!(
                    "complete with another record: {}",
                    json::to_string(&admitted.record)
                )))
            }
        }
        ("complete", Err(err)) => Err(CaseError::Mismatch(err.to_string())),
        ("admission", Err(err)) => {
            let want_reason = str_of(e, "/expect/reason").unwrap_or_default();
            let want_code = str_of(e, "/expect/wireCode").unwrap_or_default();
            if err.reason.as_str() == want_reason && err.wire_code().as_str() == want_code {
                Ok(())
            } else {
                Err(CaseError::Mismatch(err.to_string()))
            }
        }
        (_, Ok(_)) => Err(CaseError::Mismatch("complete".into())),
        (stage, Err(err)) => Err(CaseError::Fixture(format!(
            "unexpected expected stage {stage:?}; got {err}"
        ))),
    }
}

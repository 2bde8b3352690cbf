//! The Protocol view's bundle runner (issues 13/14): `wasm_core::conformance`'s three runners
//! (structural, cryptography, admission) as their own WebAssembly module. The console's
//! module leaves them out (the standalone documents' validators, the admission and cryptography
//! case evaluators: 36 KB of every visit as shipped, docs/console.md "Sizes"); the Protocol view
//! starts `pkg/<hash>/runner-worker.js` (a module worker that loads `runner.js` +
//! `runner_bg.wasm`) only when the bundles are asked for.
//!
//! One call, bytes in and JSON text out, so the page and the worker exchange a transferable
//! `Uint8Array` and a string: [`run_bundles`] reads the files as framed by
//! [`decode_files`] and answers [`report_json`]'s text.

use std::collections::HashMap;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_core::conformance::{BundleReport, run_admission, run_cryptography, run_structural};
use wasm_core::json::{self, Object, Value};

/// Reads the console's framing of the bundle files (`app::routes::protocol::encode_files`): per
/// file, the path's length (u32, little-endian), the path, the content's length, the content. A
/// truncated buffer or a path that is not UTF-8 is an error.
pub fn decode_files(mut bytes: &[u8]) -> Result<HashMap<String, Vec<u8>>, String> {
    fn part<'a>(bytes: &mut &'a [u8]) -> Result<&'a [u8], String> {
        let (len, rest) = bytes
            .split_first_chunk::<4>()
            .ok_or("truncated file framing")?;
        let len = usize::try_from(u32::from_le_bytes(*len)).map_err(|e| e.to_string())?;
        if rest.len() < len {
            return Err("truncated file framing".into());
        }
        let (this, rest) = rest.split_at(len);
        *bytes = rest;
        Ok(this)
    }
    let mut files = HashMap::new();
    while !bytes.is_empty() {
        let path = std::str::from_utf8(part(&mut bytes)?)
            .map_err(|_| "a file path is not UTF-8".to_string())?
            .to_owned();
        files.insert(path, part(&mut bytes)?.to_vec());
    }
    Ok(files)
}

/// Runs the three official bundles over files held in memory (bundle-relative paths).
pub fn run(files: &HashMap<String, Vec<u8>>) -> [BundleReport; 3] {
    let read = |path: &str| -> Result<Vec<u8>, String> {
        files
            .get(path)
            .cloned()
            .ok_or_else(|| format!("{path}: not served"))
    };
    [
        run_structural(&read),
        run_cryptography(&read),
        run_admission(&read),
    ]
}

/// The reports as JSON: `{"bundles": [{"bundle", "passed", "failures": [{"case", "expected",
/// "got"}]}]}`.
pub fn report_json(reports: &[BundleReport]) -> String {
    let bundles = reports
        .iter()
        .map(|r| {
            let failures = r
                .failures
                .iter()
                .map(|f| {
                    Value::Object(Object::from_iter([
                        ("case", Value::from(f.case.as_str())),
                        ("expected", Value::from(f.expected.as_str())),
                        ("got", Value::from(f.got.as_str())),
                    ]))
                })
                .collect();
            Value::Object(Object::from_iter([
                ("bundle", Value::from(r.bundle)),
                (
                    "passed",
                    Value::from(u64::try_from(r.passed).unwrap_or(u64::MAX)),
                ),
                ("failures", Value::Array(failures)),
            ]))
        })
        .collect();
    json::to_string(&Value::Object(Object::from_iter([(
        "bundles",
        Value::Array(bundles),
    )])))
}

/// The module's one export: framed files in ([`decode_files`]), the three reports out as JSON
/// ([`report_json`]), or `{"error": …}` when the framing cannot be read.
#[wasm_bindgen]
pub fn run_bundles(files: &[u8]) -> String {
    match decode_files(files) {
        Ok(files) => report_json(&run(&files)),
        Err(e) => json::to_string(&Value::Object(Object::from_iter([(
            "error",
            Value::from(e),
        )]))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The console's framing (`app::routes::protocol::encode_files`), for these tests.
    fn encode_files(files: &HashMap<String, Vec<u8>>) -> Vec<u8> {
        let mut paths: Vec<&String> = files.keys().collect();
        paths.sort();
        let mut out = Vec::new();
        for p in paths {
            for part in [p.as_bytes(), files[p].as_slice()] {
                out.extend_from_slice(&u32::try_from(part.len()).expect("small").to_le_bytes());
                out.extend_from_slice(part);
            }
        }
        out
    }

    #[test]
    fn framing_round_trips_and_refuses_truncation() {
        let mut files = HashMap::new();
        files.insert("a/b.json".to_string(), b"{}".to_vec());
        files.insert("empty".to_string(), Vec::new());
        files.insert("z".to_string(), vec![0, 255, 7]);
        let bytes = encode_files(&files);
        assert_eq!(decode_files(&bytes), Ok(files));
        assert_eq!(decode_files(&[]), Ok(HashMap::new()));
        for cut in [1, 4, 5, bytes.len() - 1] {
            assert_eq!(
                decode_files(&bytes[..cut]),
                Err("truncated file framing".to_string()),
                "cut at {cut}"
            );
        }
        assert!(decode_files(&[1, 0, 0, 0, 0xff, 0, 0, 0, 0]).is_err());
    }

    #[test]
    fn unreadable_framing_is_an_error_report() {
        let out = run_bundles(&[9, 0, 0, 0, b'x']);
        let v = json::parse(out.as_bytes()).expect("JSON");
        assert_eq!(
            v.pointer("/error").and_then(Value::as_str),
            Some("truncated file framing")
        );
    }

    #[test]
    fn no_files_is_three_failing_reports() {
        let v = json::parse(run_bundles(&[]).as_bytes()).expect("JSON");
        let Some(Value::Array(bundles)) = v.pointer("/bundles") else {
            panic!("no bundles: {v:?}")
        };
        let names: Vec<_> = bundles
            .iter()
            .map(|b| b.pointer("/bundle").and_then(Value::as_str))
            .collect();
        assert_eq!(
            names,
            [Some("structural"), Some("cryptography"), Some("admission")]
        );
        for b in bundles {
            assert!(
                matches!(b.pointer("/failures"), Some(Value::Array(f)) if !f.is_empty()),
                "{b:?}"
            );
        }
    }
}

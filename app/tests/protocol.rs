//! The Protocol view's runner, natively: the three official bundles from files held in memory
//! (as the browser holds them after fetching `/api/protocol/files/…`) give 58/62/30 with no
//! failure; a missing file is reported as a failure, never a crash.

use app::routes::protocol::run_bundles;
use std::collections::HashMap;
use std::path::Path;

fn bundle_root() -> std::path::PathBuf {
    let dir = std::env::var("MWP_PROTOCOL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/protocol"));
    assert!(
        dir.join("conformance/manifest.json").is_file(),
        "set MWP_PROTOCOL_DIR to the protocol bundle ({})",
        dir.display()
    );
    dir
}

fn load(dir: &Path, root: &Path, out: &mut HashMap<String, Vec<u8>>) {
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            load(&p, root, out);
        } else {
            let rel = p
                .strip_prefix(root)
                .expect("rel")
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, std::fs::read(&p).expect("read"));
        }
    }
}

fn files() -> HashMap<String, Vec<u8>> {
    let root = bundle_root();
    let mut out = HashMap::new();
    for d in ["schemas", "conformance", "cryptography", "admission"] {
        load(&root.join(d), &root, &mut out);
    }
    out
}

#[test]
fn the_official_bundles_pass_from_memory() {
    let rows = run_bundles(&files());
    let counts: Vec<(&str, usize, usize)> = rows
        .iter()
        .map(|r| (r.bundle.as_str(), r.passed, r.failed))
        .collect();
    assert_eq!(
        counts,
        [
            ("structural", 58, 0),
            ("cryptography", 62, 0),
            ("admission", 30, 0)
        ]
    );
}

#[test]
fn a_missing_or_altered_file_is_a_reported_failure() {
    let mut f = files();
    f.remove("conformance/manifest.json");
    let rows = run_bundles(&f);
    assert!(rows[0].failed > 0, "{:?}", rows[0]);
    let mut f = files();
    let key = f
        .keys()
        .find(|k| {
            k.starts_with("cryptography/") && k.ends_with(".json") && !k.ends_with("manifest.json")
        })
        .cloned()
        .expect("a cryptography file");
    f.get_mut(&key).expect("file").push(b' ');
    let rows = run_bundles(&f);
    assert!(
        rows[1]
            .failures
            .iter()
            .any(|(_, _, got)| got.contains(&key) || !got.is_empty()),
        "{:?}",
        rows[1]
    );
    assert!(rows[1].failed > 0);
}

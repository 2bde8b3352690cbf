//! The Artifact store: Artifact content by content hash, outside the Event log (§13, E-1).
//!
//! One file per hash under `<data>/artifacts/sha256/<64 hex>` holding exactly the content's
//! bytes (so `sha256sum` of the file is the hash), and its media type beside it in
//! `<hex>.media-type`. Files, not a SQLite table: content is immutable and addressed by its
//! hash, so there is nothing to index, update or join; a file per hash keeps large content out
//! of the Event store's database and its WAL, and an operator can check a file with standard
//! tools. Each file is written to a temporary name, synced and renamed, so a reader never sees
//! half of one.
//!
//! `sha256(bytes) == hash` is checked on every write (a mismatched content is refused) and on
//! every read (a file altered on disk is refused, never served): a stored name is never
//! identity (E-2). `GET /api/artifacts/{hash}` serves the content to a member only: the request
//! is signed with the reader's Registry key (`wasm_core::crypto::request`) and the reader may
//! read a Group whose log names the hash ([`MayRead`]). A hash is no secret (low-entropy content
//! can be guessed and hashed), so knowing it grants nothing; an unknown hash and a forbidden one
//! answer alike (404), so the answer does not tell whether content exists (issue 26).

use crate::wire::WireError;
use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use wasm_core::encoding::sha256_hash;
use wasm_core::json::Value;
use wasm_core::model::error::ErrorCode;

/// The largest content the store takes or serves (1 MiB): the demo's Artifacts are a few
/// hundred bytes; a bound keeps one request from filling memory.
pub const MAX_ARTIFACT_BYTES: usize = 1 << 20;

/// The media type served when none was stored with the content.
const DEFAULT_MEDIA_TYPE: &str = "application/octet-stream";

/// Why content was not stored or not served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArtifactError {
    /// The hash is not `sha256:` followed by 64 lower-case hex digits.
    BadHash(String),
    /// The media type is not `type/subtype` of token characters.
    BadMediaType(String),
    /// The content is larger than [`MAX_ARTIFACT_BYTES`].
    TooLarge { hash: String, size: u64 },
    /// On write: the bytes do not hash to the hash they were given with.
    Mismatch { claimed: String, actual: String },
    /// No content with this hash is stored.
    NotFound(String),
    /// On read: the stored bytes no longer hash to their name (altered on disk).
    Corrupt { hash: String, actual: String },
    /// The file system failed (the message names the path; logged, not sent).
    Io(String),
}

impl std::fmt::Display for ArtifactError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArtifactError::BadHash(h) => write!(
                f,
                "{h:?} is not a content hash: expected sha256: followed by 64 lower-case hex \
                 digits"
            ),
            ArtifactError::BadMediaType(m) => write!(f, "{m:?} is not a media type"),
            ArtifactError::TooLarge { hash, size } => write!(
                f,
                "the content of {hash} has {size} bytes, more than the {MAX_ARTIFACT_BYTES} \
                 this store takes"
            ),
            ArtifactError::Mismatch { claimed, actual } => write!(
                f,
                "the content given for {claimed} hashes to {actual}; it was not stored"
            ),
            ArtifactError::NotFound(h) => write!(f, "no content with the hash {h} is stored"),
            ArtifactError::Corrupt { hash, actual } => write!(
                f,
                "the stored content of {hash} hashes to {actual} (altered on disk); it is not \
                 served"
            ),
            ArtifactError::Io(e) => write!(f, "the Artifact store failed: {e}"),
        }
    }
}

impl ArtifactError {
    /// The wire error document of this refusal (§19). File-system details stay in the log.
    pub fn to_wire(&self) -> WireError {
        match self {
            ArtifactError::BadHash(_) | ArtifactError::BadMediaType(_) => {
                WireError::new(ErrorCode::SchemaValidationFailed, self.to_string())
                    .with_status(StatusCode::BAD_REQUEST)
            }
            // §19 has no "not found" code outside Groups; the status says it.
            ArtifactError::NotFound(h) => {
                WireError::new(ErrorCode::InvalidCommand, self.to_string())
                    .detail("contentHash", Value::string(h.clone()))
                    .with_status(StatusCode::NOT_FOUND)
            }
            ArtifactError::Mismatch { .. } => {
                WireError::new(ErrorCode::InvalidCommand, self.to_string())
            }
            ArtifactError::TooLarge { .. } | ArtifactError::Corrupt { .. } => {
                tracing::error!(cause = %self, "an Artifact was refused");
                WireError::new(ErrorCode::InternalError, self.to_string())
            }
            ArtifactError::Io(e) => {
                tracing::error!(cause = %e, "the Artifact store failed");
                WireError::new(
                    ErrorCode::InternalError,
                    "the Artifact store failed; see the server log",
                )
            }
        }
    }
}

/// The 64 hex digits of a `sha256:<64 lower-case hex>` content hash.
pub fn hex_of(hash: &str) -> Result<&str, ArtifactError> {
    hash.strip_prefix("sha256:")
        .filter(|_| wasm_core::encoding::is_sha256_hash(hash))
        .ok_or_else(|| ArtifactError::BadHash(hash.chars().take(80).collect()))
}

/// Whether `m` is `type/subtype` (RFC 6838 restricted names, no parameters).
fn media_type_ok(m: &str) -> bool {
    let name = |s: &str| {
        !s.is_empty()
            && s.len() <= 127
            && s.bytes().all(|b| {
                b.is_ascii_alphanumeric()
                    || matches!(b, b'!' | b'#' | b'$' | b'&' | b'-')
                    || matches!(b, b'^' | b'_' | b'.' | b'+')
            })
    };
    matches!(m.split_once('/'), Some((t, s)) if name(t) && name(s))
}

/// Content stored under its hash, verified when it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub media_type: String,
    pub bytes: Vec<u8>,
}

/// Artifact content by hash under a data directory (cheap to clone).
#[derive(Clone, Debug)]
pub struct ArtifactStore {
    dir: Arc<PathBuf>,
}

/// Distinguishes the temporary files of concurrent writes.
static TEMP: AtomicU64 = AtomicU64::new(0);

impl ArtifactStore {
    /// The store under `data` (its directory is made on the first write).
    pub fn open(data: &Path) -> ArtifactStore {
        ArtifactStore {
            dir: Arc::new(data.join("artifacts").join("sha256")),
        }
    }

    fn path(&self, hex: &str) -> PathBuf {
        self.dir.join(hex)
    }

    fn media_path(&self, hex: &str) -> PathBuf {
        self.dir.join(format!("{hex}.media-type"))
    }

    /// Stores `bytes` under `hash` after checking that they hash to it. Storing the same
    /// content again is a no-op (content-addressed).
    pub fn put(&self, hash: &str, media_type: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
        let hex = hex_of(hash)?;
        if !media_type_ok(media_type) {
            return Err(ArtifactError::BadMediaType(
                media_type.chars().take(80).collect(),
            ));
        }
        if bytes.len() > MAX_ARTIFACT_BYTES {
            return Err(ArtifactError::TooLarge {
                hash: hash.to_owned(),
                size: bytes.len() as u64,
            });
        }
        let actual = sha256_hash(bytes);
        if actual != hash {
            return Err(ArtifactError::Mismatch {
                claimed: hash.to_owned(),
                actual,
            });
        }
        if self.get(hash).is_ok() {
            return Ok(());
        }
        std::fs::create_dir_all(&*self.dir)
            .map_err(|e| ArtifactError::Io(format!("{}: {e}", self.dir.display())))?;
        // The media type first: once the content file is there, the content is stored.
        self.write_atomic(&self.media_path(hex), media_type.as_bytes())?;
        self.write_atomic(&self.path(hex), bytes)?;
        // The renames are durable once the directory is synced.
        std::fs::File::open(&*self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| ArtifactError::Io(format!("{}: {e}", self.dir.display())))
    }

    /// A new file at `path` with `bytes`: written to a temporary name, synced, renamed.
    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), ArtifactError> {
        let n = TEMP.fetch_add(1, Ordering::Relaxed);
        let tmp = self.dir.join(format!(".tmp-{}-{n}", std::process::id()));
        let io = |e: std::io::Error| ArtifactError::Io(format!("{}: {e}", path.display()));
        let written = std::fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(e));
        }
        Ok(())
    }

    /// The content stored under `hash`, refused unless its bytes still hash to it.
    pub fn get(&self, hash: &str) -> Result<Stored, ArtifactError> {
        let hex = hex_of(hash)?;
        let path = self.path(hex);
        let size = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ArtifactError::NotFound(hash.to_owned()));
            }
            Err(e) => return Err(ArtifactError::Io(format!("{}: {e}", path.display()))),
        };
        if size > MAX_ARTIFACT_BYTES as u64 {
            return Err(ArtifactError::TooLarge {
                hash: hash.to_owned(),
                size,
            });
        }
        let bytes = std::fs::read(&path)
            .map_err(|e| ArtifactError::Io(format!("{}: {e}", path.display())))?;
        let actual = sha256_hash(&bytes);
        if actual != hash {
            return Err(ArtifactError::Corrupt {
                hash: hash.to_owned(),
                actual,
            });
        }
        let media_type = std::fs::read_to_string(self.media_path(hex))
            .ok()
            .map(|m| m.trim().to_owned())
            .filter(|m| media_type_ok(m))
            .unwrap_or_else(|| DEFAULT_MEDIA_TYPE.to_owned());
        Ok(Stored { media_type, bytes })
    }
}

/// Who may read which content: the hub answers from the Groups' Memberships (`gateway::Hub`).
pub trait MayRead: Send + Sync {
    /// Whether `principal` may read a Group whose log names `hash`.
    fn may_read_artifact(&self, principal: &str, hash: &str) -> bool;
}

impl MayRead for crate::gateway::Hub {
    fn may_read_artifact(&self, principal: &str, hash: &str) -> bool {
        crate::gateway::Hub::may_read_artifact(self, principal, hash)
    }
}

/// What a read is checked against: the running Registry (who signed) and the Memberships.
#[derive(Clone)]
pub struct ReadAccess {
    pub registry: crate::live_registry::LiveRegistry,
    pub members: Arc<dyn MayRead>,
}

impl ReadAccess {
    /// `Ok` when a valid key signed `GET path` and its Principal may read `hash`; otherwise the
    /// refusal: 401 unsigned, and for a forbidden hash the store's own 404 of an unknown one.
    fn check(
        &self,
        path: &str,
        headers: &axum::http::HeaderMap,
        hash: &str,
    ) -> Result<(), Box<Response>> {
        let signer = crate::enrol::signed_reader(
            &self.registry.current(),
            path,
            crate::enrol::signed_headers(headers),
            "an Artifact",
        )
        .map_err(|e| Box::new((*e).into_response()))?;
        if self.members.may_read_artifact(&signer.id.0, hash) {
            Ok(())
        } else {
            Err(Box::new(
                ArtifactError::NotFound(hash.to_owned())
                    .to_wire()
                    .into_response(),
            ))
        }
    }
}

#[derive(Clone)]
struct Served {
    store: ArtifactStore,
    access: ReadAccess,
}

/// `GET /api/artifacts/{hash}`: the content, verified, with its media type; immutable, and
/// cached by the reader's browser only (`private`: it is for members).
async fn get_artifact(
    State(served): State<Served>,
    UrlPath(hash): UrlPath<String>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> Response {
    if let Err(e) = hex_of(&hash) {
        return e.to_wire().into_response();
    }
    if let Err(refused) = served.access.check(uri.path(), &headers, &hash) {
        return *refused;
    }
    let store = served.store;
    let read = tokio::task::spawn_blocking(move || store.get(&hash)).await;
    let stored = match read {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return e.to_wire().into_response(),
        Err(e) => return ArtifactError::Io(e.to_string()).to_wire().into_response(),
    };
    let media = HeaderValue::from_str(&stored.media_type)
        .unwrap_or(HeaderValue::from_static(DEFAULT_MEDIA_TYPE));
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, media),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, max-age=31536000, immutable"),
            ),
        ],
        stored.bytes,
    )
        .into_response()
}

/// The store's routes, each read checked against `access`.
pub fn routes(store: ArtifactStore, access: ReadAccess) -> Router {
    Router::new()
        .route("/api/artifacts/{hash}", axum::routing::get(get_artifact))
        .with_state(Served { store, access })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    fn temp_store(name: &str) -> (PathBuf, ArtifactStore) {
        let dir =
            std::env::temp_dir().join(format!("weave-artifacts-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = ArtifactStore::open(&dir);
        (dir, store)
    }

    const TEXT: &[u8] = b"Checkout flow\nby urn:missionweaveprotocol:agent:builder\n";

    #[test]
    fn content_round_trips_by_its_hash_and_twice_is_once() {
        let (dir, store) = temp_store("round");
        let hash = sha256_hash(TEXT);
        store.put(&hash, "text/markdown", TEXT).unwrap();
        store.put(&hash, "text/markdown", TEXT).unwrap();
        let got = store.get(&hash).unwrap();
        assert_eq!(got.bytes, TEXT);
        assert_eq!(got.media_type, "text/markdown");
        // The file holds exactly the bytes: its name is their hash.
        let hex = hex_of(&hash).unwrap();
        let on_disk = std::fs::read(dir.join("artifacts/sha256").join(hex)).unwrap();
        assert_eq!(sha256_hash(&on_disk), hash);
        let names: Vec<String> = std::fs::read_dir(dir.join("artifacts/sha256"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.starts_with(".tmp")), "{names:?}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn content_that_does_not_hash_to_its_name_is_not_stored() {
        let (dir, store) = temp_store("mismatch");
        let other = sha256_hash(b"something else");
        let e = store.put(&other, "text/markdown", TEXT).unwrap_err();
        assert_eq!(
            e,
            ArtifactError::Mismatch {
                claimed: other.clone(),
                actual: sha256_hash(TEXT)
            }
        );
        assert_eq!(store.get(&other), Err(ArtifactError::NotFound(other)));
        assert!(
            !dir.join("artifacts/sha256")
                .join(hex_of(&sha256_hash(TEXT)).unwrap())
                .exists()
        );
        let hash = sha256_hash(TEXT);
        assert!(matches!(
            store.put(&hash, "text/<b>", TEXT),
            Err(ArtifactError::BadMediaType(_))
        ));
        assert!(matches!(
            store.put("sha256:AB", "text/plain", TEXT),
            Err(ArtifactError::BadHash(_))
        ));
        let big = vec![b'x'; MAX_ARTIFACT_BYTES + 1];
        assert!(matches!(
            store.put(&sha256_hash(&big), "text/plain", &big),
            Err(ArtifactError::TooLarge { .. })
        ));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_file_altered_on_disk_is_refused_on_read() {
        let (dir, store) = temp_store("altered");
        let hash = sha256_hash(TEXT);
        store.put(&hash, "text/markdown", TEXT).unwrap();
        let file = dir.join("artifacts/sha256").join(hex_of(&hash).unwrap());
        std::fs::write(&file, b"Checkout flow\nby someone else\n").unwrap();
        let e = store.get(&hash).unwrap_err();
        assert!(
            matches!(&e, ArtifactError::Corrupt { hash: h, .. } if *h == hash),
            "{e:?}"
        );
        assert!(e.to_string().contains("altered on disk"), "{e}");
        // Writing the true content again repairs it (the stored file did not verify).
        store.put(&hash, "text/markdown", TEXT).unwrap();
        assert_eq!(store.get(&hash).unwrap().bytes, TEXT);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn hash_syntax() {
        let good = sha256_hash(b"x");
        assert!(hex_of(&good).is_ok());
        for bad in [
            "",
            "sha256:",
            "sha256:ab",
            &good.to_uppercase(),
            &good.replace("sha256:", "sha512:"),
            &format!("{good}0"),
            "sha256:../../../../etc/passwd",
        ] {
            assert!(
                matches!(hex_of(bad), Err(ArtifactError::BadHash(_))),
                "{bad}"
            );
        }
    }

    const READER_KEY: &str = "urn:missionweaveprotocol:key:reader";
    const READER: &str = "urn:missionweaveprotocol:human:reader";
    const OTHER_KEY: &str = "urn:missionweaveprotocol:key:other";

    fn signer(n: u8) -> wasm_core::crypto::ed25519::Signer {
        wasm_core::crypto::ed25519::Signer::from_seed(&wasm_core::crypto::SecretSeed::take(
            &mut [n; 32],
        ))
    }

    /// Members of the test: `reader` may read `readable`; `other` is in the Registry and may
    /// read nothing.
    struct Fixed(Vec<String>);
    impl MayRead for Fixed {
        fn may_read_artifact(&self, principal: &str, hash: &str) -> bool {
            principal == READER && self.0.iter().any(|h| h == hash)
        }
    }

    fn access(readable: &[&str]) -> ReadAccess {
        use wasm_core::crypto::registry::{BindingRecord, RegistryEvidence};
        let binding = |key: &str, who: &str, n: u8| BindingRecord {
            key_id: key.into(),
            principal_type: "human".into(),
            principal_id: who.into(),
            algorithm: "Ed25519".into(),
            public_key: wasm_core::encoding::b64url_encode(&signer(n).public_key()),
            valid_from: "2020-01-01T00:00:00Z".into(),
            validity_history: vec![],
        };
        let registry = RegistryEvidence {
            organization_id: "urn:missionweaveprotocol:organization:test".into(),
            bindings: vec![
                binding(READER_KEY, READER, 5),
                binding(OTHER_KEY, "urn:missionweaveprotocol:human:other", 6),
            ],
        }
        .validate()
        .unwrap();
        ReadAccess {
            registry: crate::live_registry::LiveRegistry::new(registry),
            members: Arc::new(Fixed(readable.iter().map(|h| (*h).to_owned()).collect())),
        }
    }

    /// A GET signed by `who` (`None`: unsigned).
    async fn get_as(
        app: &Router,
        path: &str,
        who: Option<(u8, &str)>,
    ) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
        let mut req = Request::get(path);
        if let Some((n, key)) = who {
            let (k, t, sig) = wasm_core::crypto::request::sign(
                &signer(n),
                key,
                "GET",
                path,
                crate::runtime::now(),
            );
            req = req
                .header(wasm_core::crypto::request::KEY_HEADER, k)
                .header(wasm_core::crypto::request::TIME_HEADER, t)
                .header(wasm_core::crypto::request::SIGNATURE_HEADER, sig);
        }
        let r = app
            .clone()
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = r.status();
        let headers = r.headers().clone();
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, headers, body.to_vec())
    }

    async fn get(app: &Router, path: &str) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
        get_as(app, path, Some((5, READER_KEY))).await
    }

    /// The attack: anyone who can reach the server guesses or learns a hash and fetches the
    /// bytes. Unsigned: 401, whatever the hash. Signed by a Principal who is in no Group that
    /// names it: the same 404 as a hash never stored. A forged signature: 401.
    #[tokio::test]
    async fn only_a_member_reads_content_and_a_forbidden_hash_looks_unknown() {
        let (dir, store) = temp_store("members");
        let hash = sha256_hash(TEXT);
        store.put(&hash, "text/markdown", TEXT).unwrap();
        let unknown = sha256_hash(b"never stored");
        let app = routes(store, access(&[&hash, &unknown]));
        let path = format!("/api/artifacts/{hash}");
        let (s, _, body) = get_as(&app, &path, None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        assert!(!body.windows(TEXT.len()).any(|w| w == TEXT));
        let (s, _, body) = get_as(&app, &format!("/api/artifacts/{unknown}"), None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "no hint whether it exists");
        assert!(!String::from_utf8_lossy(&body).contains("not stored"));
        // Forged: another key signing under the reader's key ID.
        let (s, _, _) = get_as(&app, &path, Some((9, READER_KEY))).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        // A non-member: like an unknown hash.
        let (s_forbidden, _, forbidden) = get_as(&app, &path, Some((6, OTHER_KEY))).await;
        let other_unknown = sha256_hash(b"nothing");
        let (s_unknown, _, not_there) = get_as(
            &app,
            &format!("/api/artifacts/{other_unknown}"),
            Some((6, OTHER_KEY)),
        )
        .await;
        assert_eq!(
            (s_forbidden, s_unknown),
            (StatusCode::NOT_FOUND, StatusCode::NOT_FOUND)
        );
        let code = |b: &[u8]| {
            wasm_core::json::parse(b)
                .unwrap()
                .pointer("/code")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        assert_eq!(code(&forbidden), code(&not_there));
        // The member reads it, cached by its own browser only.
        let (s, h, body) = get_as(&app, &path, Some((5, READER_KEY))).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(body, TEXT);
        assert!(
            h[header::CACHE_CONTROL]
                .to_str()
                .unwrap()
                .starts_with("private")
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn the_route_serves_verified_content_and_refuses_the_rest() {
        let (dir, store) = temp_store("route");
        let hash = sha256_hash(TEXT);
        store.put(&hash, "text/markdown", TEXT).unwrap();
        let unknown = sha256_hash(b"never stored");
        let app = routes(store, access(&[&hash, &unknown]));

        let (s, h, body) = get(&app, &format!("/api/artifacts/{hash}")).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(body, TEXT);
        assert_eq!(h[header::CONTENT_TYPE], "text/markdown");
        assert!(
            h[header::CACHE_CONTROL]
                .to_str()
                .unwrap()
                .contains("immutable")
        );

        let doc = |b: &[u8]| wasm_core::json::parse(b).expect("a wire error document");
        let (s, _, body) = get(&app, "/api/artifacts/sha256:AB").await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        let d = doc(&body);
        assert_eq!(
            d.pointer("/code").and_then(Value::as_str),
            Some("SCHEMA_VALIDATION_FAILED")
        );

        let (s, _, body) = get(&app, &format!("/api/artifacts/{unknown}")).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        let d = doc(&body);
        assert_eq!(
            d.pointer("/details/contentHash").and_then(Value::as_str),
            Some(unknown.as_str())
        );

        let file = dir.join("artifacts/sha256").join(hex_of(&hash).unwrap());
        std::fs::write(&file, b"tampered").unwrap();
        let (s, _, body) = get(&app, &format!("/api/artifacts/{hash}")).await;
        assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            !body.windows(8).any(|w| w == b"tampered"),
            "nothing of the bytes"
        );
        let d = doc(&body);
        assert!(
            d.pointer("/message")
                .and_then(Value::as_str)
                .is_some_and(|m| m.contains("altered on disk")),
            "{d:?}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

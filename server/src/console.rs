//! Serving the console (issue 13): the built Leptos app (`dist/` from `scripts/build-web.sh`,
//! else `public/`) with a fallback to `index.html` for the app's deep links, gzip (the files
//! `scripts/build-web.sh release` compressed ahead of time with zopfli, `NAME.gz`, else on the fly), cache
//! headers (the content-hashed `/pkg/<hash>/` files are immutable, everything else is
//! revalidated), a strict Content-Security-Policy, and the protocol bundle read-only for the
//! Protocol view, which runs the official bundles in the browser.

use std::path::{Path, PathBuf};

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower_http::compression::CompressionLayer;
use tower_http::services::{ServeDir, ServeFile};

/// The console's Content-Security-Policy: its own origin only, no inline script or style;
/// `'wasm-unsafe-eval'` lets the page compile its WebAssembly module (and nothing else);
/// `worker-src 'self'`: the first replay's module workers (`pkg/<hash>/worker.js`, which load the
/// same module) and the Protocol view's bundle runner (`pkg/<hash>/runner-worker.js`, which loads
/// `runner_bg.wasm` on request), nothing else. The lazily loaded views' chunks
/// (`pkg/<hash>/split_*.wasm`, `chunk_*.wasm`) are fetched by `pkg/<hash>/__wasm_split.js`
/// (`script-src 'self'`) with `fetch` (`connect-src 'self'`) and compiled under the same
/// `'wasm-unsafe-eval'`: nothing to add for them.
pub const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
     worker-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; \
     object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The bundle directories the Protocol view reads (the official runners' inputs).
pub const BUNDLE_DIRS: [&str; 4] = ["schemas", "conformance", "cryptography", "admission"];

/// The directory to serve: `ROOT/dist` once the app is built, else `ROOT/public`.
pub fn app_dir(workspace: &Path) -> PathBuf {
    let dist = workspace.join("dist");
    if dist.join("index.html").is_file() {
        dist
    } else {
        workspace.join("public")
    }
}

/// File types the console ships; a missing one is a plain 404, never the app shell.
const ASSET_EXTENSIONS: [&str; 10] = [
    ".js", ".wasm", ".css", ".json", ".ico", ".png", ".svg", ".txt", ".map", ".html",
];

/// True for a path the app itself routes (not an API, not an asset): those get `index.html`,
/// so deep links work (`/mission/<group>`; Group IDs may contain dots).
fn is_app_route(path: &str) -> bool {
    !path.starts_with("/api/")
        && !path.starts_with("/pkg/")
        && !path.starts_with("/style/")
        && !ASSET_EXTENSIONS.iter().any(|e| path.ends_with(e))
}

/// Static files with the app's fallback to `index.html` for deep links (`/mission/…`).
pub fn static_service(dir: &Path) -> Router {
    let index = dir.join("index.html");
    let fallback = move |uri: Uri, req: Request| {
        let index = index.clone();
        async move {
            if is_app_route(uri.path()) {
                let shell = ServeFile::new(index).precompressed_gzip();
                match tower::ServiceExt::oneshot(shell, req).await {
                    Ok(r) => r.into_response(),
                    Err(e) => match e {},
                }
            } else {
                StatusCode::NOT_FOUND.into_response()
            }
        }
    };
    Router::new().fallback_service(
        ServeDir::new(dir)
            .append_index_html_on_directories(true)
            // `NAME.gz` beside a file: sent as is to a client that accepts gzip (the
            // compression layer leaves a response that already has a Content-Encoding alone).
            .precompressed_gzip()
            .fallback(axum::handler::HandlerWithoutStateExt::into_service(
                fallback,
            )),
    )
}

/// Security and cache headers on every response.
pub async fn headers(req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    let mut r = next.run(req).await;
    let ok = r.status() == StatusCode::OK;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    let cache = if path.starts_with("/pkg/") && ok {
        // Content-hashed by scripts/build-web.sh: a new build has a new path.
        "public, max-age=31536000, immutable"
    } else if path.starts_with("/api/") {
        "no-store"
    } else {
        "no-cache"
    };
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    }
    r
}

/// gzip on the fly for everything compressible that has no precompressed `NAME.gz` (CSS, the
/// bundle's JSON, API answers; every file in a debug build).
pub fn compression() -> CompressionLayer {
    CompressionLayer::new().gzip(true)
}

/// Every file under the bundle directories, as bundle-relative paths.
pub fn bundle_files(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if let Ok(rel) = p.strip_prefix(root) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    for d in BUNDLE_DIRS {
        walk(&root.join(d), root, &mut out);
    }
    out.sort();
    out
}

/// `GET /api/protocol/index` (`{"files": [...]}`) and `GET /api/protocol/files/<path>`: the
/// bundle's four directories, read-only. Without a bundle the index says so (`{"error"}`).
pub fn protocol_routes(root: Option<PathBuf>) -> Router {
    use wasm_core::json::{Object, Value};
    let mut o = Object::new();
    match &root {
        Some(r) => o.insert(
            "files",
            Value::Array(bundle_files(r).into_iter().map(Value::string).collect()),
        ),
        None => o.insert("error", Value::string("set MWP_PROTOCOL_DIR on the server")),
    }
    let index: std::sync::Arc<str> = wasm_core::json::to_string(&Value::Object(o)).into();
    let mut app = Router::new().route(
        "/api/protocol/index",
        get(move || {
            let body = index.to_string();
            async move { ([(header::CONTENT_TYPE, "application/json")], body) }
        }),
    );
    if let Some(root) = root {
        for d in BUNDLE_DIRS {
            app = app.nest_service(
                &format!("/api/protocol/files/{d}"),
                ServeDir::new(root.join(d)),
            );
        }
    }
    app
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request as HttpRequest;
    use tower::ServiceExt;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("weave-console-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("pkg/abc123")).expect("temp dir");
        std::fs::write(
            dir.join("index.html"),
            "<!doctype html><title>shell</title>",
        )
        .expect("w");
        std::fs::write(
            dir.join("pkg/abc123/app.js"),
            "export default 1;\n".repeat(50),
        )
        .expect("w");
        dir
    }

    fn bundle() -> Option<PathBuf> {
        crate::bundle::protocol_root(None).ok()
    }

    async fn get(
        app: &Router,
        path: &str,
        gzip: bool,
    ) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
        let mut req = HttpRequest::get(path);
        if gzip {
            req = req.header(header::ACCEPT_ENCODING, "gzip");
        }
        let r = app
            .clone()
            .oneshot(req.body(Body::empty()).expect("request"))
            .await
            .expect("response");
        let status = r.status();
        let headers = r.headers().clone();
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .expect("body")
            .to_vec();
        (status, headers, body)
    }

    fn app(dir: &Path) -> Router {
        crate::http::router(
            crate::http::AppState::new(dir, "{}".into())
                .routes(protocol_routes(bundle()))
                .routes(crate::enrol::routes(std::sync::Arc::new(
                    crate::enrol::Enrolment::refused(),
                )))
                .timeout(std::time::Duration::from_secs(5)),
        )
    }

    #[tokio::test]
    async fn the_shell_deep_links_assets_headers_and_compression() {
        let dir = temp_dir("serve");
        let app = app(&dir);
        let (s, h, body) = get(&app, "/", false).await;
        assert_eq!(s, StatusCode::OK);
        assert!(String::from_utf8_lossy(&body).contains("shell"));
        assert_eq!(h[header::CONTENT_SECURITY_POLICY], CSP);
        assert_eq!(h[header::CACHE_CONTROL], "no-cache");
        assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        // A deep link is the shell; a missing asset is a plain 404.
        let (s, _, body) = get(&app, "/mission/urn:missionweaveprotocol:group:v1.2", false).await;
        assert_eq!(s, StatusCode::OK);
        assert!(String::from_utf8_lossy(&body).contains("shell"));
        let (s, _, _) = get(&app, "/pkg/abc123/missing.js", false).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        // Hashed files are immutable and gzip-compressed on request.
        let (s, h, body) = get(&app, "/pkg/abc123/app.js", true).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(
            h[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
        assert_eq!(h[header::CONTENT_ENCODING], "gzip");
        assert!(body.len() < 900, "{} bytes", body.len());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The files `scripts/build-web.sh release` compressed ahead of time (`NAME.gz`, zopfli) are
    /// sent byte for byte to a client that accepts gzip, never compressed a second time; a client
    /// that does not gets the file itself.
    #[tokio::test]
    async fn precompressed_files_are_sent_as_built() {
        let dir = temp_dir("precompressed");
        let wasm = b"\0asm\x01\0\0\0 the module".repeat(40);
        // The server never decodes these bytes, so a marker shows which file was sent.
        let gz = b"zopfli output of the module".to_vec();
        std::fs::write(dir.join("pkg/abc123/app_bg.wasm"), &wasm).expect("w");
        std::fs::write(dir.join("pkg/abc123/app_bg.wasm.gz"), &gz).expect("w");
        std::fs::write(dir.join("index.html.gz"), b"zopfli output of the shell").expect("w");
        let app = app(&dir);

        let (s, h, body) = get(&app, "/pkg/abc123/app_bg.wasm", true).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(h[header::CONTENT_ENCODING], "gzip");
        assert_eq!(h[header::CONTENT_TYPE], "application/wasm");
        assert_eq!(
            h[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
        assert_eq!(body, gz);
        let (s, h, body) = get(&app, "/pkg/abc123/app_bg.wasm", false).await;
        assert_eq!(s, StatusCode::OK);
        assert!(!h.contains_key(header::CONTENT_ENCODING));
        assert_eq!(body, wasm);

        // A lazily loaded view's chunk and the loaders' script (app/src/routes/lazy.rs): the
        // same precompressed, immutable files, the chunk with the type that
        // `WebAssembly.instantiateStreaming` requires; a missing chunk is a 404, never the shell.
        std::fs::write(dir.join("pkg/abc123/split_mission.wasm"), &wasm).expect("w");
        std::fs::write(
            dir.join("pkg/abc123/split_mission.wasm.gz"),
            b"zopfli chunk",
        )
        .expect("w");
        std::fs::write(dir.join("pkg/abc123/__wasm_split.js"), b"export {};").expect("w");
        std::fs::write(dir.join("pkg/abc123/__wasm_split.js.gz"), b"zopfli js").expect("w");
        for (path, kind, gz) in [
            (
                "/pkg/abc123/split_mission.wasm",
                "application/wasm",
                &b"zopfli chunk"[..],
            ),
            (
                "/pkg/abc123/__wasm_split.js",
                "text/javascript",
                &b"zopfli js"[..],
            ),
        ] {
            let (s, h, body) = get(&app, path, true).await;
            assert_eq!(s, StatusCode::OK, "{path}");
            assert_eq!(h[header::CONTENT_ENCODING], "gzip", "{path}");
            assert_eq!(h[header::CONTENT_TYPE], kind, "{path}");
            assert_eq!(
                h[header::CACHE_CONTROL],
                "public, max-age=31536000, immutable",
                "{path}"
            );
            assert_eq!(body, gz, "{path}");
        }
        let (s, h, _) = get(&app, "/pkg/abc123/split_ledger.wasm", true).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        assert_ne!(
            h.get(header::CACHE_CONTROL).map(|v| v.as_bytes()),
            Some(&b"public, max-age=31536000, immutable"[..])
        );

        // The shell, at `/` and at a deep link.
        for path in ["/", "/mission/urn:missionweaveprotocol:group:v1.2"] {
            let (s, h, body) = get(&app, path, true).await;
            assert_eq!(s, StatusCode::OK, "{path}");
            assert_eq!(h[header::CONTENT_ENCODING], "gzip", "{path}");
            assert_eq!(body, b"zopfli output of the shell", "{path}");
            assert_eq!(h[header::CONTENT_SECURITY_POLICY], CSP, "{path}");
            let (_, h, body) = get(&app, path, false).await;
            assert!(!h.contains_key(header::CONTENT_ENCODING), "{path}");
            assert!(String::from_utf8_lossy(&body).contains("shell"), "{path}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn the_bundle_is_served_read_only_and_only_its_four_directories() {
        let Some(root) = bundle() else {
            panic!("set MWP_PROTOCOL_DIR to the protocol bundle");
        };
        let dir = temp_dir("bundle");
        let app = app(&dir);
        let (s, h, body) = get(&app, "/api/protocol/index", false).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(h[header::CACHE_CONTROL], "no-store");
        let v = wasm_core::json::parse(&body).expect("json");
        let files: Vec<&str> = match v.pointer("/files") {
            Some(wasm_core::json::Value::Array(a)) => a.iter().filter_map(|f| f.as_str()).collect(),
            _ => panic!("no files"),
        };
        assert_eq!(files.len(), bundle_files(&root).len());
        assert!(files.contains(&"conformance/manifest.json"));
        assert!(
            files
                .iter()
                .all(|f| BUNDLE_DIRS.iter().any(|d| f.starts_with(&format!("{d}/"))))
        );
        let (s, _, body) = get(&app, "/api/protocol/files/conformance/manifest.json", false).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(
            body,
            std::fs::read(root.join("conformance/manifest.json")).expect("read")
        );
        for p in [
            "/api/protocol/files/spec/PROTOCOL.md",
            "/api/protocol/files/conformance/../spec/PROTOCOL.md",
            "/api/protocol/files/README.md",
        ] {
            let (s, _, _) = get(&app, p, false).await;
            assert_eq!(s, StatusCode::NOT_FOUND, "{p}");
        }
        // Without a bundle the index says so.
        let none = protocol_routes(None);
        let (s, _, body) = get(&none, "/api/protocol/index", false).await;
        assert_eq!(s, StatusCode::OK);
        assert!(String::from_utf8_lossy(&body).contains("MWP_PROTOCOL_DIR"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn enrolment_is_refused_by_a_deployment_through_the_router() {
        let dir = temp_dir("enrol");
        let r = app(&dir)
            .oneshot(
                HttpRequest::post("/api/enrol")
                    .body(Body::from("{}"))
                    .expect("request"),
            )
            .await
            .expect("response");
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn app_routes_fall_back_to_the_shell_and_files_do_not() {
        for p in [
            "/",
            "/mission",
            "/mission/urn:x:group:v1.2",
            "/sign-in",
            "/settings",
        ] {
            assert!(is_app_route(p), "{p}");
        }
        for p in [
            "/api/registry",
            "/pkg/abc/app.js",
            "/style/x.css",
            "/favicon.ico",
            "/a/b.json",
        ] {
            assert!(!is_app_route(p), "{p}");
        }
    }

    #[test]
    fn the_csp_allows_no_inline_script_and_compiles_wasm_only() {
        assert!(CSP.contains("script-src 'self' 'wasm-unsafe-eval';"));
        assert!(!CSP.contains("unsafe-inline"));
        assert!(!CSP.contains("'unsafe-eval'"));
        assert!(CSP.contains("object-src 'none'"));
        assert!(CSP.contains("worker-src 'self';"));
    }
}

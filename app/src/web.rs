//! Small browser helpers: `localStorage`, `fetch`, random bytes, the `<html>` element. They
//! compile natively (web-sys is plain bindings) but only run in the browser.

use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

pub fn window() -> Option<web_sys::Window> {
    web_sys::window()
}

/// A readable message for a JavaScript error value.
pub fn js_error(e: &JsValue) -> String {
    if let Some(s) = e.as_string() {
        return s;
    }
    Reflect::get(e, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

pub fn local_get(key: &str) -> Option<String> {
    window()?.local_storage().ok()??.get_item(key).ok()?
}

pub fn local_set(key: &str, value: &str) {
    if let Some(Ok(Some(s))) = window().map(|w| w.local_storage()) {
        let _ = s.set_item(key, value);
    }
}

/// This tab's `sessionStorage` (the join link's token: kept across a reload, never in
/// `localStorage`, so it leaves with the tab).
pub fn session_get(key: &str) -> Option<String> {
    window()?.session_storage().ok()??.get_item(key).ok()?
}

pub fn session_set(key: &str, value: &str) {
    if let Some(Ok(Some(s))) = window().map(|w| w.session_storage()) {
        let _ = s.set_item(key, value);
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    js_sys::Date::now().max(0.0) as u64
}

/// The clock as protocol time (whole microseconds since the epoch; millisecond precision): what
/// the console shows and signs (`issuedAt`). Against the static demo's in-browser authority it
/// is the authority's paced clock (the page's `now()`), so a Command signed at the fastest pace
/// is not hours behind the node (docs/static-demo.md, "Backend seam").
pub fn now() -> wasm_core::authority::Micros {
    #[cfg(target_arch = "wasm32")]
    let ms = page_authority()
        .and_then(|p| {
            let f: js_sys::Function = Reflect::get(&p, &JsValue::from_str("now"))
                .ok()?
                .dyn_into()
                .ok()?;
            f.call0(&p).ok()?.as_f64()
        })
        .map_or_else(now_ms, |t| t.max(0.0) as u64);
    #[cfg(not(target_arch = "wasm32"))]
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    wasm_core::authority::Micros(i64::try_from(ms).unwrap_or(i64::MAX / 1000) * 1000)
}

/// `N` bytes from the browser's CSPRNG (`crypto.getRandomValues`).
pub fn random_bytes<const N: usize>() -> Result<[u8; N], String> {
    let crypto = window()
        .ok_or("no window")?
        .crypto()
        .map_err(|e| js_error(&e))?;
    let mut out = [0u8; N];
    crypto
        .get_random_values_with_u8_array(&mut out)
        .map_err(|e| js_error(&e))?;
    Ok(out)
}

/// The browser's preferred languages (`navigator.languages`).
pub fn languages() -> Vec<String> {
    let Some(w) = window() else {
        return Vec::new();
    };
    w.navigator()
        .languages()
        .iter()
        .filter_map(|v| v.as_string())
        .collect()
}

/// Sets an attribute on `<html>` (`lang`, `data-theme`).
pub fn set_root_attr(name: &str, value: &str) {
    if let Some(el) = window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
    {
        let _ = el.set_attribute(name, value);
    }
}

pub fn prefers_dark() -> bool {
    window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .is_some_and(|m| m.matches())
}

thread_local! {
    /// Read once, at the first request: the page does not change its authority.
    static PAGE_AUTHORITY: Option<JsValue> = window()
        .and_then(|w| Reflect::get(&w, &JsValue::from_str(PAGE_AUTHORITY_NAME)).ok())
        // An object whose `request` is a function: an element that a page's markup happens to
        // name `mwpDemo` (a named element is a global too) is not an authority.
        .filter(|v| {
            v.is_object()
                && Reflect::get(v, &JsValue::from_str("request")).is_ok_and(|f| f.is_function())
        });
}

/// The global a page sets to say the console's authority runs in the page itself.
pub const PAGE_AUTHORITY_NAME: &str = "mwpDemo";

/// The Backend seam (docs/static-demo.md): where the console's authority is, chosen once per
/// page. `None`: a server, the page's own origin (`fetch`, and `/ws` for the socket). `Some`:
/// the static demo's in-browser authority, which the demo page declares by setting
/// `window.mwpDemo` before the console starts (demo-node/web/demo-page.js: the page owns the
/// authority's Worker and carries requests and `/ws` frames over its postMessage). Its
/// members: `request(method, path, body)` → a promise of `{status, body: Uint8Array}`;
/// `socket()` → an object with a WebSocket's `send`, `close`, `onopen`, `onmessage` (given
/// `{data}`) and `onclose`; `now()` → the authority's clock in milliseconds. Nothing else in
/// the console asks where the authority runs.
pub fn page_authority() -> Option<JsValue> {
    PAGE_AUTHORITY.with(Clone::clone)
}

/// A request to the page's authority: the status and the body's bytes.
async fn page_request(
    page: &JsValue,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Result<(u16, Vec<u8>), String> {
    let request: js_sys::Function = Reflect::get(page, &JsValue::from_str("request"))
        .map_err(|e| js_error(&e))?
        .dyn_into()
        .map_err(|_| "the page's authority has no request()".to_string())?;
    let body = body.map_or(JsValue::NULL, JsValue::from_str);
    let promise = request
        .call3(
            page,
            &JsValue::from_str(method),
            &JsValue::from_str(path),
            &body,
        )
        .map_err(|e| js_error(&e))?;
    let answer = JsFuture::from(js_sys::Promise::resolve(&promise))
        .await
        .map_err(|e| js_error(&e))?;
    let status = Reflect::get(&answer, &JsValue::from_str("status"))
        .ok()
        .and_then(|s| s.as_f64())
        .filter(|s| (100.0..600.0).contains(s))
        .ok_or("the page's authority gave no status")? as u16;
    let bytes = Reflect::get(&answer, &JsValue::from_str("body"))
        .ok()
        .and_then(|b| b.dyn_into::<js_sys::Uint8Array>().ok())
        .map(|b| b.to_vec())
        .unwrap_or_default();
    Ok((status, bytes))
}

/// `GET url` as bytes; an HTTP error status is an error.
pub async fn get_bytes(url: &str) -> Result<Vec<u8>, String> {
    if let Some(page) = page_authority() {
        let (status, bytes) = page_request(&page, "GET", url, None).await?;
        if !(200..300).contains(&status) {
            return Err(format!("GET {url}: HTTP {status}"));
        }
        return Ok(bytes);
    }
    let resp = gloo_net::http::Request::get(url)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !resp.ok() {
        return Err(format!("GET {url}: HTTP {}", resp.status()));
    }
    resp.binary().await.map_err(|e| e.to_string())
}

/// `GET url` as text; an HTTP error status is an error.
pub async fn get_text(url: &str) -> Result<String, String> {
    let bytes = get_bytes(url).await?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

/// `POST url` with a JSON body; returns the status and the body text.
pub async fn post_json(url: &str, body: &str) -> Result<(u16, String), String> {
    if let Some(page) = page_authority() {
        let (status, bytes) = page_request(&page, "POST", url, Some(body)).await?;
        return Ok((status, String::from_utf8_lossy(&bytes).into_owned()));
    }
    let resp = gloo_net::http::Request::post(url)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .map_err(|e| e.to_string())?
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = resp.status();
    Ok((status, resp.text().await.map_err(|e| e.to_string())?))
}

/// `GET path` signed with the human's key (`wasm_core::crypto::request`): the server serves
/// member-only reads (a human's Groups, an Artifact's bytes) only to a signed request. `path`
/// is signed exactly as fetched. Returns the status and the body.
pub async fn signed_get(
    path: &str,
    signer: &wasm_core::crypto::ed25519::Signer,
    key_id: &str,
) -> Result<(u16, Vec<u8>), String> {
    use wasm_core::crypto::request;
    if let Some(page) = page_authority() {
        // A dedicated Worker answers its own page only: nothing to sign for (static-demo.md).
        return page_request(&page, "GET", path, None).await;
    }
    let (key, signed_at, signature) = request::sign(signer, key_id, "GET", path, now());
    let resp = gloo_net::http::Request::get(path)
        .header(request::KEY_HEADER, &key)
        .header(request::TIME_HEADER, &signed_at)
        .header(request::SIGNATURE_HEADER, &signature)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = resp.status();
    Ok((status, resp.binary().await.map_err(|e| e.to_string())?))
}

/// A refused request in a few words: `HTTP 403 AUTH_FORBIDDEN` when the body is a §19 error
/// document (its `code`), else the status alone (a body is never shown raw).
pub fn http_error(status: u16, body: &[u8]) -> String {
    let code = wasm_core::json::parse(body).ok().and_then(|v| {
        v.pointer("/code")
            .and_then(wasm_core::json::Value::as_str)
            .filter(|c| c.len() <= 64 && c.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
            .map(str::to_owned)
    });
    match code {
        Some(c) => format!("HTTP {status} {c}"),
        None => format!("HTTP {status}"),
    }
}

/// Offers `text` as a file download (the exported key file).
pub fn download(filename: &str, text: &str) -> Result<(), String> {
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let bag = web_sys::BlobPropertyBag::new();
    bag.set_type("application/json");
    let blob =
        web_sys::Blob::new_with_str_sequence_and_options(&parts, &bag).map_err(|e| js_error(&e))?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(|e| js_error(&e))?;
    let doc = window().and_then(|w| w.document()).ok_or("no document")?;
    let a = doc
        .create_element("a")
        .map_err(|e| js_error(&e))?
        .dyn_into::<web_sys::HtmlAnchorElement>()
        .map_err(|_| "not an anchor")?;
    a.set_href(&url);
    a.set_download(filename);
    a.click();
    let _ = web_sys::Url::revoke_object_url(&url);
    Ok(())
}

/// Yields to the browser's event loop once (a zero-delay timeout), so a state change paints
/// before synchronous work starts.
pub async fn yield_now() {
    sleep_ms(0).await;
}

/// Waits `ms` milliseconds (a browser timeout).
pub async fn sleep_ms(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = JsFuture::from(p).await;
}

/// `performance.now()` in milliseconds (the wall clock where there is no `performance`).
pub fn perf_now() -> f64 {
    window()
        .and_then(|w| w.performance())
        .map_or_else(js_sys::Date::now, |p| p.now())
}

/// Resolves at the next animation frame (after the browser painted the previous one).
pub async fn next_frame() {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let cb = wasm_bindgen::closure::Closure::once_into_js(move || {
            let _ = resolve.call0(&JsValue::NULL);
        });
        if let Some(w) = window() {
            let _ = w.request_animation_frame(cb.unchecked_ref());
        }
    });
    let _ = JsFuture::from(p).await;
}

/// Scrolls the first table row of Event `event_id` (`tr[data-event-id]`) to the middle of the
/// window (an alarm's link, `routes::events`). False while no such row is drawn.
pub fn scroll_to_event_row(event_id: &str) -> bool {
    let Some(doc) = window().and_then(|w| w.document()) else {
        return false;
    };
    let Ok(rows) = doc.query_selector_all("tr[data-event-id]") else {
        return false;
    };
    for i in 0..rows.length() {
        let Some(el) = rows
            .item(i)
            .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
        else {
            continue;
        };
        if el.get_attribute("data-event-id").as_deref() == Some(event_id) {
            let opts = web_sys::ScrollIntoViewOptions::new();
            opts.set_block(web_sys::ScrollLogicalPosition::Center);
            el.scroll_into_view_with_scroll_into_view_options(&opts);
            return true;
        }
    }
    false
}

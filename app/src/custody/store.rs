//! IndexedDB storage of the (encrypted) key file: database `missionweave-console`, object
//! store `keys`, one record under `current` holding the key file's JSON text. Only ciphertext
//! is stored; the passphrase and the seed never reach storage.

use crate::web::{js_error, window};
use js_sys::{Function, Promise};
use wasm_bindgen::prelude::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

const DB: &str = "missionweave-console";
const STORE: &str = "keys";
const RECORD: &str = "current";

/// Resolves when `req` succeeds (with its result) or fails.
async fn done(req: &web_sys::IdbRequest) -> Result<JsValue, String> {
    let req2 = req.clone();
    let p = Promise::new(&mut |resolve: Function, reject: Function| {
        let ok_req = req2.clone();
        let ok = Closure::once_into_js(move || {
            let _ = resolve.call1(
                &JsValue::NULL,
                &ok_req.result().unwrap_or(JsValue::UNDEFINED),
            );
        });
        let err_req = req2.clone();
        let err = Closure::once_into_js(move || {
            let e = err_req
                .error()
                .ok()
                .flatten()
                .map(|e| JsValue::from_str(&e.message()))
                .unwrap_or(JsValue::from_str("IndexedDB request failed"));
            let _ = reject.call1(&JsValue::NULL, &e);
        });
        req2.set_onsuccess(Some(ok.unchecked_ref()));
        req2.set_onerror(Some(err.unchecked_ref()));
    });
    JsFuture::from(p).await.map_err(|e| js_error(&e))
}

async fn db() -> Result<web_sys::IdbDatabase, String> {
    let factory = window()
        .ok_or("no window")?
        .indexed_db()
        .map_err(|e| js_error(&e))?
        .ok_or("IndexedDB is not available")?;
    let open = factory.open_with_u32(DB, 1).map_err(|e| js_error(&e))?;
    let up = open.clone();
    let upgrade = Closure::once_into_js(move || {
        if let Ok(r) = up.result()
            && let Ok(db) = r.dyn_into::<web_sys::IdbDatabase>()
            && !db.object_store_names().contains(STORE)
        {
            let _ = db.create_object_store(STORE);
        }
    });
    open.set_onupgradeneeded(Some(upgrade.unchecked_ref()));
    let v = done(&open).await?;
    v.dyn_into().map_err(|_| "not an IdbDatabase".to_string())
}

fn store(db: &web_sys::IdbDatabase, write: bool) -> Result<web_sys::IdbObjectStore, String> {
    let mode = if write {
        web_sys::IdbTransactionMode::Readwrite
    } else {
        web_sys::IdbTransactionMode::Readonly
    };
    db.transaction_with_str_and_mode(STORE, mode)
        .and_then(|t| t.object_store(STORE))
        .map_err(|e| js_error(&e))
}

/// The stored key file's text, if any.
pub async fn load() -> Result<Option<String>, String> {
    let db = db().await?;
    let req = store(&db, false)?
        .get(&JsValue::from_str(RECORD))
        .map_err(|e| js_error(&e))?;
    Ok(done(&req).await?.as_string())
}

/// Stores (replaces) the key file's text.
pub async fn save(text: &str) -> Result<(), String> {
    let db = db().await?;
    let req = store(&db, true)?
        .put_with_key(&JsValue::from_str(text), &JsValue::from_str(RECORD))
        .map_err(|e| js_error(&e))?;
    done(&req).await.map(|_| ())
}

/// Removes the stored key file.
pub async fn remove() -> Result<(), String> {
    let db = db().await?;
    let req = store(&db, true)?
        .delete(&JsValue::from_str(RECORD))
        .map_err(|e| js_error(&e))?;
    done(&req).await.map(|_| ())
}

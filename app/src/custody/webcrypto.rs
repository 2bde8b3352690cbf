//! Passphrase encryption of the key file with WebCrypto: PBKDF2-HMAC-SHA-256 derives an
//! AES-256-GCM key (not extractable), which seals the 32-byte seed with the file's identity as
//! additional data. No cryptography is written here: the browser's SubtleCrypto does it.

use super::keyfile::{ITERATIONS, KeyFile};
use crate::web::{js_error, random_bytes, window};
use js_sys::{Array, Object, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_core::crypto::SecretSeed;

fn subtle() -> Result<web_sys::SubtleCrypto, String> {
    Ok(window()
        .ok_or("no window")?
        .crypto()
        .map_err(|e| js_error(&e))?
        .subtle())
}

fn set(o: &Object, k: &str, v: &JsValue) {
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

async fn aes_key(
    passphrase: &str,
    salt: &[u8],
    iterations: u32,
) -> Result<web_sys::CryptoKey, String> {
    let s = subtle()?;
    let pass = Uint8Array::from(passphrase.as_bytes());
    let base = JsFuture::from(
        s.import_key_with_str(
            "raw",
            &pass,
            "PBKDF2",
            false,
            &Array::of1(&JsValue::from_str("deriveKey")),
        )
        .map_err(|e| js_error(&e))?,
    )
    .await
    .map_err(|e| js_error(&e))?;
    pass.fill(0, 0, pass.length());
    let base: web_sys::CryptoKey = base.dyn_into().map_err(|_| "not a CryptoKey")?;
    let kdf = Object::new();
    set(&kdf, "name", &JsValue::from_str("PBKDF2"));
    set(&kdf, "hash", &JsValue::from_str("SHA-256"));
    set(&kdf, "salt", &Uint8Array::from(salt));
    set(
        &kdf,
        "iterations",
        &JsValue::from_f64(f64::from(iterations)),
    );
    let aes = Object::new();
    set(&aes, "name", &JsValue::from_str("AES-GCM"));
    set(&aes, "length", &JsValue::from_f64(256.0));
    let usages = Array::of2(&JsValue::from_str("encrypt"), &JsValue::from_str("decrypt"));
    let key = JsFuture::from(
        s.derive_key_with_object_and_object(&kdf, &base, &aes, false, &usages)
            .map_err(|e| js_error(&e))?,
    )
    .await
    .map_err(|e| js_error(&e))?;
    key.dyn_into().map_err(|_| "not a CryptoKey".to_string())
}

fn gcm(iv: &[u8], aad: &[u8]) -> Object {
    let p = Object::new();
    set(&p, "name", &JsValue::from_str("AES-GCM"));
    set(&p, "iv", &Uint8Array::from(iv));
    set(&p, "additionalData", &Uint8Array::from(aad));
    p
}

/// Encrypts `seed` into a new key file for `principal_id` / `key_id`.
pub async fn seal(
    seed: &SecretSeed,
    passphrase: &str,
    principal_id: &str,
    key_id: &str,
    created_at: &str,
) -> Result<KeyFile, String> {
    let salt = random_bytes::<16>()?;
    let iv = random_bytes::<12>()?;
    let public_key = seed.public_key();
    let aad = KeyFile::associated_data(principal_id, key_id, &public_key);
    let key = aes_key(passphrase, &salt, ITERATIONS).await?;
    let plain = Uint8Array::from(&seed.expose()[..]);
    let sealed = JsFuture::from(
        subtle()?
            .encrypt_with_object_and_buffer_source(&gcm(&iv, &aad), &key, &plain)
            .map_err(|e| js_error(&e))?,
    )
    .await
    .map_err(|e| js_error(&e));
    plain.fill(0, 0, plain.length());
    let ciphertext = Uint8Array::new(&sealed?).to_vec();
    Ok(KeyFile {
        principal_id: principal_id.to_owned(),
        key_id: key_id.to_owned(),
        public_key,
        created_at: created_at.to_owned(),
        iterations: ITERATIONS,
        salt: salt.to_vec(),
        iv: iv.to_vec(),
        ciphertext,
    })
}

/// Decrypts a key file; a wrong passphrase or a tampered file fails (GCM tag, then the
/// public-key check).
pub async fn open(file: &KeyFile, passphrase: &str) -> Result<SecretSeed, String> {
    let key = aes_key(passphrase, &file.salt, file.iterations).await?;
    let data = Uint8Array::from(&file.ciphertext[..]);
    let plain = JsFuture::from(
        subtle()?
            .decrypt_with_object_and_buffer_source(&gcm(&file.iv, &file.aad()), &key, &data)
            .map_err(|e| js_error(&e))?,
    )
    .await
    .map_err(|e| js_error(&e))?;
    let arr = Uint8Array::new(&plain);
    let mut bytes = arr.to_vec();
    arr.fill(0, 0, arr.length());
    file.open(&mut bytes).map_err(|e| e.to_string())
}

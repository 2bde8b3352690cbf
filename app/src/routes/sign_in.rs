//! Sign in (`/sign-in`): generate a key in this browser (enrolled in the development
//! Organization through `POST /api/dev/enrol`, which only a development server accepts), or
//! import a key file; unlock a stored key with its passphrase; export, lock or remove it. The
//! private key never leaves the browser: only the public key is sent, to enrol it.

use crate::i18n::*;
use crate::state::{Console, KeyState, use_console};
use leptos::prelude::*;
use leptos_i18n::I18nContext;

/// Why an action failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Fail {
    Name,
    Short,
    Mismatch,
    Wrong,
    File(String),
    Storage(String),
}

/// What the last action said (shown in a live region). (Native builds, the tests, never run
/// the browser actions that produce most of these.)
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
enum Note {
    None,
    Busy,
    Enrolled,
    EnrolRefused(String),
    Fail(Fail),
}

fn note_view(i18n: I18nContext<Locale>, n: Note) -> AnyView {
    match n {
        Note::None => ().into_any(),
        Note::Busy => {
            view! { <p class="state loading">{t!(i18n, sign_in.generating)}</p> }.into_any()
        }
        Note::Enrolled => view! { <p class="state ok">{t!(i18n, sign_in.enrolled)}</p> }.into_any(),
        Note::EnrolRefused(d) => view! {
            <p class="state error">{t!(i18n, sign_in.enrol_refused, detail = move || d.clone())}</p>
        }
        .into_any(),
        Note::Fail(f) => {
            let text = match f {
                Fail::Name => t!(i18n, sign_in.err_name).into_any(),
                Fail::Short => t!(i18n, sign_in.err_short).into_any(),
                Fail::Mismatch => t!(i18n, sign_in.err_mismatch).into_any(),
                Fail::Wrong => t!(i18n, sign_in.err_wrong).into_any(),
                Fail::File(d) => t!(i18n, sign_in.err_file, detail = move || d.clone()).into_any(),
                Fail::Storage(d) => {
                    t!(i18n, sign_in.err_storage, detail = move || d.clone()).into_any()
                }
            };
            view! { <p class="state error">{text}</p> }.into_any()
        }
    }
}

/// Reads the stored key file at start-up (locked until the passphrase is given).
pub fn load_stored_key(console: Console) {
    #[cfg(target_arch = "wasm32")]
    leptos::task::spawn_local(async move {
        let state = match crate::custody::store::load().await {
            Ok(Some(text)) => match crate::custody::keyfile::KeyFile::parse(&text) {
                Ok(f) => KeyState::Locked {
                    principal_id: f.principal_id,
                    key_id: f.key_id,
                },
                Err(_) => KeyState::None,
            },
            _ => KeyState::None,
        };
        console.key.set(state);
    });
    #[cfg(not(target_arch = "wasm32"))]
    console.key.set(KeyState::None);
}

/// Holds the unlocked seed as a `Signer` and opens the session.
#[cfg(target_arch = "wasm32")]
fn unlocked(
    console: Console,
    file: &crate::custody::keyfile::KeyFile,
    seed: wasm_core::crypto::SecretSeed,
) {
    let signer = std::sync::Arc::new(wasm_core::crypto::ed25519::Signer::from_seed(&seed));
    drop(seed);
    console.signer.set_value(Some(signer.clone()));
    console.key.set(KeyState::Unlocked {
        principal_id: file.principal_id.clone(),
        key_id: file.key_id.clone(),
    });
    crate::components::session::start(
        console,
        file.principal_id.clone(),
        file.key_id.clone(),
        signer,
    );
}

#[cfg(target_arch = "wasm32")]
mod actions {
    use super::*;
    use crate::custody::keyfile::{self, KeyFile};
    use crate::custody::{store, webcrypto};
    use wasm_core::crypto::SecretSeed;

    pub async fn generate(
        console: Console,
        name: String,
        p1: String,
        p2: String,
    ) -> Result<Option<String>, Fail> {
        if !keyfile::passphrase_ok(&p1) {
            return Err(Fail::Short);
        }
        if p1 != p2 {
            return Err(Fail::Mismatch);
        }
        let mut raw = crate::web::random_bytes::<32>().map_err(Fail::Storage)?;
        let seed = SecretSeed::take(&mut raw);
        let (principal_id, key_id) =
            keyfile::dev_identity(&name, &seed.public_key()).ok_or(Fail::Name)?;
        let created =
            wasm_core::authority::Micros(i64::try_from(crate::web::now_ms()).unwrap_or(0) * 1000)
                .format_whole_seconds();
        let file = webcrypto::seal(&seed, &p1, &principal_id, &key_id, &created)
            .await
            .map_err(Fail::Storage)?;
        store::save(&file.to_json()).await.map_err(Fail::Storage)?;
        // Only the public half is sent (a dev-only endpoint; a deployment refuses it).
        let mut o = wasm_core::json::Object::new();
        o.insert(
            "principalId",
            wasm_core::json::Value::string(file.principal_id.clone()),
        );
        o.insert("keyId", wasm_core::json::Value::string(file.key_id.clone()));
        o.insert(
            "publicKey",
            wasm_core::json::Value::string(wasm_core::encoding::b64url_encode(&file.public_key)),
        );
        let body = wasm_core::json::to_string(&wasm_core::json::Value::Object(o));
        let enrol = match crate::web::post_json("/api/dev/enrol", &body).await {
            Ok((200 | 201, _)) => None,
            Ok((status, text)) => Some(format!("HTTP {status} {text}")),
            Err(e) => Some(e),
        };
        unlocked(console, &file, seed);
        Ok(enrol)
    }

    pub async fn unlock(console: Console, pass: String) -> Result<(), Fail> {
        let text = store::load()
            .await
            .map_err(Fail::Storage)?
            .ok_or(Fail::Wrong)?;
        let file = KeyFile::parse(&text).map_err(|e| Fail::File(e.to_string()))?;
        let seed = webcrypto::open(&file, &pass)
            .await
            .map_err(|_| Fail::Wrong)?;
        unlocked(console, &file, seed);
        Ok(())
    }

    pub async fn import(console: Console, text: String, pass: String) -> Result<(), Fail> {
        let file = KeyFile::parse(&text).map_err(|e| Fail::File(e.to_string()))?;
        let seed = webcrypto::open(&file, &pass)
            .await
            .map_err(|_| Fail::Wrong)?;
        store::save(&file.to_json()).await.map_err(Fail::Storage)?;
        unlocked(console, &file, seed);
        Ok(())
    }

    pub async fn export() -> Result<(), Fail> {
        let text = store::load()
            .await
            .map_err(Fail::Storage)?
            .ok_or(Fail::Wrong)?;
        let file = KeyFile::parse(&text).map_err(|e| Fail::File(e.to_string()))?;
        let name = file
            .principal_id
            .rsplit(':')
            .next()
            .unwrap_or("key")
            .to_owned();
        crate::web::download(&format!("missionweave-key-{name}.json"), &text).map_err(Fail::Storage)
    }

    pub async fn forget(console: Console) -> Result<(), Fail> {
        store::remove().await.map_err(Fail::Storage)?;
        console.signer.set_value(None);
        crate::components::session::stop();
        console.key.set(KeyState::None);
        Ok(())
    }

    pub async fn file_text(input: web_sys::HtmlInputElement) -> Result<String, Fail> {
        let file = input
            .files()
            .and_then(|f| f.get(0))
            .ok_or_else(|| Fail::File("no file".into()))?;
        let v = wasm_bindgen_futures::JsFuture::from(file.text())
            .await
            .map_err(|e| Fail::File(crate::web::js_error(&e)))?;
        v.as_string().ok_or_else(|| Fail::File("not text".into()))
    }
}

#[component]
pub fn SignIn() -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let note = RwSignal::new(Note::None);
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, sign_in.title)}</h1>
            <p class="intro">{t!(i18n, sign_in.intro)}</p>
            <div id="sign-in-status" role="status" aria-live="polite">
                {move || note_view(i18n, note.get())}
            </div>
            {move || match console.key.get() {
                KeyState::Loading => view! { <crate::components::states::Loading /> }.into_any(),
                KeyState::None => view! { <Generate note /> <Import note /> }.into_any(),
                KeyState::Locked { principal_id, .. } => view! { <Unlock note who=principal_id /> }.into_any(),
                KeyState::Unlocked { principal_id, key_id } => view! { <Held note who=principal_id key_id /> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn Generate(note: RwSignal<Note>) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let name = RwSignal::new(String::new());
    let p1 = RwSignal::new(String::new());
    let p2 = RwSignal::new(String::new());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        note.set(Note::Busy);
        #[cfg(target_arch = "wasm32")]
        {
            let (n, a, b) = (name.get_untracked(), p1.get_untracked(), p2.get_untracked());
            leptos::task::spawn_local(async move {
                note.set(match actions::generate(console, n, a, b).await {
                    Ok(None) => Note::Enrolled,
                    Ok(Some(d)) => Note::EnrolRefused(d),
                    Err(f) => Note::Fail(f),
                });
            });
        }
        #[cfg(not(target_arch = "wasm32"))]
        let _ = (console, name, p1, p2);
    };
    view! {
        <form class="card" id="generate-form" on:submit=submit>
            <h2>{t!(i18n, sign_in.generate_title)}</h2>
            <p class="hint">{t!(i18n, sign_in.generate_hint)}</p>
            <label for="name">{t!(i18n, sign_in.name)}</label>
            <input id="name" type="text" autocomplete="username" required
                aria-describedby="name-hint" bind:value=name />
            <p class="hint" id="name-hint">{t!(i18n, sign_in.name_hint)}</p>
            <label for="pass1">{t!(i18n, sign_in.passphrase)}</label>
            <input id="pass1" type="password" autocomplete="new-password" required
                aria-describedby="pass-hint" bind:value=p1 />
            <p class="hint" id="pass-hint">{t!(i18n, sign_in.passphrase_hint)}</p>
            <label for="pass2">{t!(i18n, sign_in.passphrase_again)}</label>
            <input id="pass2" type="password" autocomplete="new-password" required bind:value=p2 />
            <button type="submit" id="generate" class="primary">{t!(i18n, sign_in.generate)}</button>
        </form>
    }
}

#[component]
fn Import(note: RwSignal<Note>) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let file_ref = NodeRef::<leptos::html::Input>::new();
    let pass = RwSignal::new(String::new());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        note.set(Note::Busy);
        #[cfg(target_arch = "wasm32")]
        if let Some(input) = file_ref.get_untracked() {
            let p = pass.get_untracked();
            leptos::task::spawn_local(async move {
                let r = match actions::file_text(input).await {
                    Ok(text) => actions::import(console, text, p).await,
                    Err(f) => Err(f),
                };
                note.set(match r {
                    Ok(()) => Note::None,
                    Err(f) => Note::Fail(f),
                });
            });
        }
        #[cfg(not(target_arch = "wasm32"))]
        let _ = (console, file_ref, pass);
    };
    view! {
        <form class="card" id="import-form" on:submit=submit>
            <h2>{t!(i18n, sign_in.import_title)}</h2>
            <label for="import-file">{t!(i18n, sign_in.import_file)}</label>
            <input id="import-file" type="file" accept="application/json,.json" required node_ref=file_ref />
            <label for="import-pass">{t!(i18n, sign_in.passphrase)}</label>
            <input id="import-pass" type="password" autocomplete="current-password" required bind:value=pass />
            <button type="submit" id="import">{t!(i18n, sign_in.import)}</button>
        </form>
    }
}

#[component]
fn Unlock(note: RwSignal<Note>, who: String) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let pass = RwSignal::new(String::new());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        note.set(Note::Busy);
        #[cfg(target_arch = "wasm32")]
        {
            let p = pass.get_untracked();
            leptos::task::spawn_local(async move {
                note.set(match actions::unlock(console, p).await {
                    Ok(()) => Note::None,
                    Err(f) => Note::Fail(f),
                });
            });
        }
        #[cfg(not(target_arch = "wasm32"))]
        let _ = (console, pass);
    };
    let forget = move |_| forget(console, note, i18n);
    view! {
        <form class="card" id="unlock-form" on:submit=submit>
            <h2>{t!(i18n, sign_in.unlock_title)}</h2>
            <p>{t!(i18n, sign_in.stored, who = move || who.clone())}</p>
            <label for="unlock-pass">{t!(i18n, sign_in.passphrase)}</label>
            <input id="unlock-pass" type="password" autocomplete="current-password" required bind:value=pass />
            <button type="submit" id="unlock" class="primary">{t!(i18n, sign_in.unlock)}</button>
            <button type="button" id="forget" on:click=forget>{t!(i18n, sign_in.forget)}</button>
        </form>
    }
}

fn forget(console: Console, note: RwSignal<Note>, i18n: I18nContext<Locale>) {
    let ok = web_sys::window()
        .and_then(|w| {
            w.confirm_with_message(t_string!(i18n, sign_in.forget_confirm))
                .ok()
        })
        .unwrap_or(false);
    if !ok {
        return;
    }
    #[cfg(target_arch = "wasm32")]
    leptos::task::spawn_local(async move {
        if let Err(f) = actions::forget(console).await {
            note.set(Note::Fail(f));
        }
    });
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (console, note);
}

#[component]
fn Held(note: RwSignal<Note>, who: String, key_id: String) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let public = console
        .signer
        .with_value(|s| {
            s.as_ref()
                .map(|s| wasm_core::encoding::b64url_encode(&s.public_key()))
        })
        .unwrap_or_default();
    let export = move |_| {
        #[cfg(target_arch = "wasm32")]
        leptos::task::spawn_local(async move {
            if let Err(f) = actions::export().await {
                note.set(Note::Fail(f));
            }
        });
    };
    let lock = move |_| {
        console.signer.set_value(None);
        crate::components::session::stop();
        let (p, k) = match console.key.get_untracked() {
            KeyState::Unlocked {
                principal_id,
                key_id,
            } => (principal_id, key_id),
            _ => return,
        };
        console.key.set(KeyState::Locked {
            principal_id: p,
            key_id: k,
        });
        note.set(Note::None);
    };
    let forget = move |_| forget(console, note, i18n);
    let who2 = who.clone();
    view! {
        <div class="card" id="key-held">
            <h2 id="key-unlocked">{t!(i18n, sign_in.unlocked, who = move || who2.clone())}</h2>
            <dl>
                <dt>{t!(i18n, sign_in.key_id)}</dt>
                <dd><code>{key_id}</code></dd>
                <dt>{t!(i18n, sign_in.public_key)}</dt>
                <dd><code class="hash">{public}</code></dd>
            </dl>
            <div class="actions">
                <button type="button" id="export" on:click=export>{t!(i18n, sign_in.export)}</button>
                <button type="button" id="lock" on:click=lock>{t!(i18n, sign_in.lock)}</button>
                <button type="button" id="forget" on:click=forget>{t!(i18n, sign_in.forget)}</button>
            </div>
        </div>
    }
}

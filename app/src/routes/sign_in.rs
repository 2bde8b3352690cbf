//! Sign in (`/sign-in`): generate a key in this browser (enrolled in the development
//! Organization through `POST /api/enrol`, which only a development server accepts), or
//! import a key file; unlock a stored key with its passphrase; export, lock or remove it. The
//! private key never leaves the browser: only the public key is sent, to enrol it, with the
//! enrolment token the server printed at start (the join link fills it in, `crate::join`).

use crate::i18n::*;
use crate::state::{Console, KeyState, RegistryState, use_console};
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use wasm_core::json::{Object, Value};

/// The development Organization's second human: the demo asks nothing of them.
pub const SECURITY_OWNER: &str = "security-owner";

/// What `POST /api/enrol` answered, as the person is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Enrol {
    /// 201 (new) or 200 (the same binding again).
    Enrolled,
    /// 202: an Organization that asks an administrator to confirm each key (`org confirm`).
    Pending,
    /// 403 `AUTH_FORBIDDEN`: on the development Organization, no enrolment token or not the one
    /// the server printed; on another, the invitation is unknown, used, expired or for another
    /// name (the server's own words, a line at most, kept to show).
    Forbidden(Option<String>),
    /// 429 `RATE_LIMITED`: too many attempts; the whole seconds to wait, when said.
    RateLimited(Option<u64>),
    /// 409: the development Organization holds the most keys it keeps.
    Full,
    /// Anything else (the status and wire code, or the network's error).
    Refused(String),
}

/// Reads the enrolment's answer: its status first, then the §19 error document's `code` and
/// `retryAfterMs` (a body is never shown raw).
pub fn enrol_outcome(status: u16, body: &[u8]) -> Enrol {
    let doc = wasm_core::json::parse(body).ok();
    let code = doc
        .as_ref()
        .and_then(|v| v.pointer("/code"))
        .and_then(Value::as_str);
    match status {
        200 | 201 => Enrol::Enrolled,
        202 => Enrol::Pending,
        403 if code.is_none_or(|c| c == "AUTH_FORBIDDEN") => Enrol::Forbidden(
            doc.as_ref()
                .and_then(|v| v.pointer("/message"))
                .and_then(Value::as_str)
                .filter(|m| m.len() <= 300 && !m.chars().any(char::is_control))
                .map(str::to_owned),
        ),
        429 => Enrol::RateLimited(
            doc.as_ref()
                .and_then(|v| v.pointer("/retryAfterMs"))
                .and_then(|n| match n {
                    Value::Number(n) => n.as_safe_u64(),
                    _ => None,
                })
                .map(|ms| ms.div_ceil(1000)),
        ),
        409 => Enrol::Full,
        _ => Enrol::Refused(crate::web::http_error(status, body)),
    }
}

/// The enrolment request's body: the public half of the key and, when given, the enrolment
/// token (trimmed: a pasted token often carries a line break). Never the seed.
pub fn enrol_body(principal_id: &str, key_id: &str, public_key: &[u8; 32], token: &str) -> String {
    let mut o = Object::new();
    o.insert("principalId", Value::string(principal_id.to_owned()));
    o.insert("keyId", Value::string(key_id.to_owned()));
    o.insert(
        "publicKey",
        Value::string(wasm_core::encoding::b64url_encode(public_key)),
    );
    let token = token.trim();
    if !token.is_empty() {
        o.insert("token", Value::string(token.to_owned()));
    }
    wasm_core::json::to_string(&Value::Object(o))
}

/// Why an action failed.
#[derive(Clone, Debug, PartialEq)]
pub enum Fail {
    Name,
    Short,
    Mismatch,
    Wrong,
    File(String),
    Storage(String),
    /// An existing key that was not taken (`custody::import`).
    Key(crate::custody::import::ImportError),
}

/// What the last action said (shown in a live region). (Native builds, the tests, never run
/// the browser actions that produce most of these.)
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
enum Note {
    None,
    Busy,
    Enrol(Enrol),
    Fail(Fail),
}

fn note_view(i18n: I18nContext<Locale>, n: Note) -> AnyView {
    match n {
        Note::None => ().into_any(),
        Note::Busy => {
            view! { <p class="state loading">{t!(i18n, sign_in.generating)}</p> }.into_any()
        }
        Note::Enrol(Enrol::Enrolled) => {
            let demo = use_console().registry.with_untracked(RegistryState::is_dev);
            let text = if demo {
                t!(i18n, sign_in.enrolled).into_any()
            } else {
                t!(i18n, sign_in.enrolled_org).into_any()
            };
            view! { <p class="state ok">{text}</p> }.into_any()
        }
        Note::Enrol(Enrol::Pending) => view! {
            <p class="state loading" id="enrol-pending">{t!(i18n, sign_in.enrol_pending)}</p>
        }
        .into_any(),
        Note::Enrol(refused) => {
            let why = match refused {
                Enrol::Forbidden(said) => {
                    if use_console().registry.with_untracked(RegistryState::is_dev) {
                        t!(i18n, sign_in.enrol_forbidden).into_any()
                    } else {
                        let said = said.unwrap_or_default();
                        t!(
                            i18n,
                            sign_in.enrol_invitation_refused,
                            detail = move || said.clone()
                        )
                        .into_any()
                    }
                }
                Enrol::RateLimited(Some(s)) => {
                    t!(i18n, sign_in.enrol_rate_limited, seconds = move || s).into_any()
                }
                Enrol::RateLimited(None) => t!(i18n, sign_in.enrol_rate_limited_later).into_any(),
                Enrol::Full => t!(i18n, sign_in.enrol_full).into_any(),
                Enrol::Refused(d) => {
                    t!(i18n, sign_in.enrol_refused, detail = move || d.clone()).into_any()
                }
                Enrol::Enrolled | Enrol::Pending => ().into_any(),
            };
            // Said in full: the key is kept (it is the person's), but nothing it signs counts.
            view! {
                <div class="state error" id="enrol-refused">
                    <span class="icon" aria-hidden="true">"✕"</span>
                    <p>{why}" "{t!(i18n, sign_in.not_enrolled)}</p>
                </div>
            }
            .into_any()
        }
        Note::Fail(f) => {
            let text = match f {
                Fail::Name => t!(i18n, sign_in.err_name).into_any(),
                Fail::Short => t!(i18n, sign_in.err_short).into_any(),
                Fail::Mismatch => t!(i18n, sign_in.err_mismatch).into_any(),
                Fail::Wrong => t!(i18n, sign_in.err_wrong).into_any(),
                Fail::File(d) => t!(i18n, sign_in.err_file, detail = move || d.clone()).into_any(),
                Fail::Key(e) => {
                    use crate::custody::import::ImportError as E;
                    match e {
                        E::Unrecognized | E::NotEd25519(_) => {
                            t!(i18n, sign_in.err_key_unrecognized).into_any()
                        }
                        E::PublicKeyMismatch => t!(i18n, sign_in.err_key_mismatch).into_any(),
                        E::NotInRegistry => t!(i18n, sign_in.err_key_not_in_registry).into_any(),
                        E::NotHuman(kind) => {
                            t!(i18n, sign_in.err_key_not_human, kind = move || kind.clone())
                                .into_any()
                        }
                        E::NotValid => t!(i18n, sign_in.err_key_not_valid).into_any(),
                    }
                }
                Fail::Storage(d) => {
                    t!(i18n, sign_in.err_storage, detail = move || d.clone()).into_any()
                }
            };
            view! { <p class="state error">{text}</p> }.into_any()
        }
    }
}

/// Reads the stored key file at start-up (locked until the passphrase is given). In the static
/// demo with no key stored, `visit` opens the read-only visitor session (docs/static-demo.md
/// "Visitor view"): the caller passes `routes::lazy::visit`, whose chunk holds that code, so
/// this view's module does not depend on the loader of its own chunk.
pub fn load_stored_key(console: Console, visit: fn(Console)) {
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
        // The static demo with nobody signed in: read it at once, read-only (the visitor key).
        let visiting = state == KeyState::None && crate::web::page_authority().is_some();
        console.key.set(state);
        if visiting {
            visit(console);
        }
    });
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = visit;
        console.key.set(KeyState::None);
    }
}

/// Holds the unlocked seed as a `Signer` and opens the session.
#[cfg(target_arch = "wasm32")]
/// `session`: open the socket now. Not for a key whose enrolment was just refused or is
/// pending: its HELLO would be refused over and over, and that refusal is not news.
fn unlocked(
    console: Console,
    file: &crate::custody::keyfile::KeyFile,
    seed: wasm_core::crypto::SecretSeed,
    session: bool,
) {
    let signer = std::sync::Arc::new(wasm_core::crypto::ed25519::Signer::from_seed(&seed));
    drop(seed);
    console.signer.set_value(Some(signer.clone()));
    console.key.set(KeyState::Unlocked {
        principal_id: file.principal_id.clone(),
        key_id: file.key_id.clone(),
    });
    if !session {
        return;
    }
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
        token: String,
    ) -> Result<Enrol, Fail> {
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
        // Only the public half is sent (a dev-only endpoint; a deployment refuses it). A refusal
        // leaves the key stored and unlocked (it is the person's; it can be enrolled again).
        let enrol = enrol(&file.principal_id, &file.key_id, &file.public_key, &token).await;
        let enrolled = enrol == Enrol::Enrolled;
        unlocked(console, &file, seed, enrolled);
        Ok(enrol)
    }

    /// Sends the enrolment and reads its answer.
    async fn enrol(principal_id: &str, key_id: &str, public_key: &[u8; 32], token: &str) -> Enrol {
        let body = enrol_body(principal_id, key_id, public_key, token);
        match crate::web::post_json("/api/enrol", &body).await {
            Ok((status, text)) => enrol_outcome(status, text.as_bytes()),
            Err(e) => Enrol::Refused(e),
        }
    }

    /// Enrols the unlocked key again (after a refusal: with the token this time), and starts
    /// its session again once enrolled, so the socket and the Groups poll need not wait.
    pub async fn enrol_again(console: Console, token: String) -> Enrol {
        let KeyState::Unlocked {
            principal_id,
            key_id,
        } = console.key.get_untracked()
        else {
            return Enrol::Refused(String::new());
        };
        let Some(signer) = console.signer.with_value(Option::clone) else {
            return Enrol::Refused(String::new());
        };
        let outcome = enrol(&principal_id, &key_id, &signer.public_key(), &token).await;
        if outcome == Enrol::Enrolled {
            crate::components::session::stop();
            crate::components::session::start(console, principal_id, key_id, signer);
        }
        outcome
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
        unlocked(console, &file, seed, true);
        Ok(())
    }

    /// An existing key (seed, PKCS#8 PEM or JWK): found in the Registry by its public key,
    /// sealed at once under a new passphrase, stored and unlocked.
    pub async fn import_existing(
        console: Console,
        text: String,
        p1: String,
        p2: String,
    ) -> Result<(), Fail> {
        use crate::custody::import;
        if !keyfile::passphrase_ok(&p1) {
            return Err(Fail::Short);
        }
        if p1 != p2 {
            return Err(Fail::Mismatch);
        }
        let seed = import::seed_of(&text).map_err(Fail::Key)?;
        drop(text);
        let registry = crate::components::session::registry()
            .ok_or(Fail::Key(import::ImportError::NotInRegistry))?;
        let now = crate::web::now().format_whole_seconds();
        let (principal_id, key_id) =
            import::identity_in(&registry, &seed.public_key(), &now).map_err(Fail::Key)?;
        let file = webcrypto::seal(&seed, &p1, &principal_id, &key_id, &now)
            .await
            .map_err(Fail::Storage)?;
        store::save(&file.to_json()).await.map_err(Fail::Storage)?;
        unlocked(console, &file, seed, true);
        Ok(())
    }

    pub async fn import(console: Console, text: String, pass: String) -> Result<(), Fail> {
        let file = KeyFile::parse(&text).map_err(|e| Fail::File(e.to_string()))?;
        let seed = webcrypto::open(&file, &pass)
            .await
            .map_err(|_| Fail::Wrong)?;
        store::save(&file.to_json()).await.map_err(Fail::Storage)?;
        unlocked(console, &file, seed, true);
        Ok(())
    }

    /// The static demo's key, one click: read from the page's authority, matched to its
    /// Registry binding, held unlocked in memory only (`custody::demo`), and the session opened.
    pub async fn use_demo_key(console: Console) -> Result<(), Fail> {
        use crate::custody::{demo, import};
        let body = crate::web::get_bytes("/api/demo/key")
            .await
            .map_err(Fail::Storage)?;
        let registry = crate::components::session::registry()
            .ok_or(Fail::Key(import::ImportError::NotInRegistry))?;
        let now = crate::web::now().format_whole_seconds();
        let key =
            demo::read(&body, |p| import::identity_in(&registry, p, &now)).map_err(Fail::Key)?;
        let signer = std::sync::Arc::new(wasm_core::crypto::ed25519::Signer::from_seed(&key.seed));
        drop(key.seed);
        console.signer.set_value(Some(signer.clone()));
        console.key.set(KeyState::Unlocked {
            principal_id: key.principal_id.clone(),
            key_id: key.key_id.clone(),
        });
        crate::components::session::start(console, key.principal_id, key.key_id, signer);
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
    // The join link reached in-app (on a page load it is taken before the router starts): keep
    // its token, and leave `/join` for `/sign-in` in the router too.
    #[cfg(target_arch = "wasm32")]
    {
        let navigate = leptos_router::hooks::use_navigate();
        Effect::new(move |_| {
            if crate::join::take_from_address() {
                navigate(
                    crate::join::SIGN_IN,
                    leptos_router::NavigateOptions {
                        replace: true,
                        ..Default::default()
                    },
                );
            }
        });
    }
    view! {
        <section class="view" aria-labelledby="view-title">
            <h1 id="view-title">{t!(i18n, sign_in.title)}</h1>
            <p class="intro">{t!(i18n, sign_in.intro)}</p>
            <div id="sign-in-status" role="status" aria-live="polite">
                {move || note_view(i18n, note.get())}
            </div>
            {move || match console.key.get() {
                KeyState::Loading => view! { <crate::components::states::Loading /> }.into_any(),
                // The demo read before signing in (the visitor key): the demo key replaces it.
                KeyState::None | KeyState::Visiting { .. } if in_demo() => view! { <DemoKeyCard note /> }.into_any(),
                KeyState::None | KeyState::Visiting { .. } => view! { <Generate note /> <Import note /> <ImportExisting note /> }.into_any(),
                KeyState::Locked { principal_id, .. } => view! { <Unlock note who=principal_id /> }.into_any(),
                KeyState::Unlocked { principal_id, key_id } => view! { <Held note who=principal_id key_id /> }.into_any(),
            }}
        </section>
    }
}

/// Whether the console's authority runs in this page (the static demo, `web::page_authority`).
fn in_demo() -> bool {
    #[cfg(target_arch = "wasm32")]
    return crate::web::page_authority().is_some();
    #[cfg(not(target_arch = "wasm32"))]
    false
}

/// The static demo's "use the demo key" (docs/static-demo.md, "Keys"): one click, no passphrase;
/// said plainly to be a demonstration key made in this tab, never a real identity.
#[component]
fn DemoKeyCard(note: RwSignal<Note>) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let click = move |_| {
        note.set(Note::Busy);
        #[cfg(target_arch = "wasm32")]
        leptos::task::spawn_local(async move {
            note.set(match actions::use_demo_key(console).await {
                Ok(()) => Note::None,
                Err(f) => Note::Fail(f),
            });
        });
        #[cfg(not(target_arch = "wasm32"))]
        let _ = console;
    };
    view! {
        <div class="card" id="demo-key">
            <h2>{t!(i18n, sign_in.demo_key_title)}</h2>
            <p class="hint" id="demo-key-hint">{t!(i18n, sign_in.demo_key_hint)}</p>
            <button type="button" id="use-demo-key" class="primary" aria-describedby="demo-key-hint"
                on:click=click>{t!(i18n, sign_in.demo_key_use)}</button>
        </div>
    }
}

/// The join link's name and token kept for this tab (none natively: no browser storage).
fn kept() -> crate::join::Join {
    #[cfg(target_arch = "wasm32")]
    return crate::join::kept();
    #[cfg(not(target_arch = "wasm32"))]
    crate::join::Join::default()
}

#[component]
fn Generate(note: RwSignal<Note>) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let join = kept();
    let name = RwSignal::new(join.name.unwrap_or_default());
    let token = RwSignal::new(join.token.unwrap_or_default());
    let p1 = RwSignal::new(String::new());
    let p2 = RwSignal::new(String::new());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        note.set(Note::Busy);
        let (n, a, b, k) = (
            name.get_untracked(),
            p1.get_untracked(),
            p2.get_untracked(),
            token.get_untracked(),
        );
        // The passphrases leave the form as soon as they are taken, whatever follows.
        p1.set(String::new());
        p2.set(String::new());
        #[cfg(target_arch = "wasm32")]
        leptos::task::spawn_local(async move {
            note.set(match actions::generate(console, n, a, b, k).await {
                Ok(e) => Note::Enrol(e),
                Err(f) => Note::Fail(f),
            });
        });
        #[cfg(not(target_arch = "wasm32"))]
        let _ = (console, n, a, b, k);
    };
    let demo = move || console.registry.with(RegistryState::is_dev);
    view! {
        <form class="card" id="generate-form" on:submit=submit>
            <h2>{t!(i18n, sign_in.generate_title)}</h2>
            <p class="hint">{t!(i18n, sign_in.generate_hint)}</p>
            <label for="name">{t!(i18n, sign_in.name)}</label>
            <input id="name" type="text" autocomplete="username" required
                aria-describedby="name-hint" bind:value=name />
            <p class="hint" id="name-hint">{t!(i18n, sign_in.name_hint)}</p>
            {move || demo().then(|| view! { <DemoHumans name /> })}
            <label for="enrol-token">{t!(i18n, sign_in.token)}</label>
            <input id="enrol-token" type="password" autocomplete="off" spellcheck="false"
                aria-describedby="token-hint" bind:value=token />
            <p class="hint" id="token-hint">{t!(i18n, sign_in.token_hint)}</p>
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

/// The development Organization's humans and what the demo asks of each, beside the name field;
/// a name fills the field.
#[component]
fn DemoHumans(name: RwSignal<String>) -> impl IntoView {
    let i18n = use_i18n();
    let human = move |who: &'static str| {
        view! {
            <button type="button" class="demo-human" data-name=who
                aria-pressed=move || (name.get() == who).to_string()
                on:click=move |_| name.set(who.to_owned())>
                <code translate="no">{who}</code>
            </button>
        }
    };
    view! {
        <div class="note" id="demo-humans">
            <p>{t!(i18n, sign_in.humans_intro)}</p>
            <ul>
                <li>{human(simulation::agents::plan::HUMAN)}" — "{t!(i18n, sign_in.human_mission_owner)}</li>
                <li>{human(SECURITY_OWNER)}" — "{t!(i18n, sign_in.human_security_owner)}</li>
            </ul>
        </div>
    }
}

/// "Use an existing key": a key made elsewhere and bound in this Organization's Registry
/// (a seed, PKCS#8 PEM or JWK), sealed here at once (issue 26: the console against any
/// authority). The text and the passphrases are emptied as soon as the action has them.
#[component]
fn ImportExisting(note: RwSignal<Note>) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let key = RwSignal::new(String::new());
    let p1 = RwSignal::new(String::new());
    let p2 = RwSignal::new(String::new());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        note.set(Note::Busy);
        let (k, a, b) = (key.get_untracked(), p1.get_untracked(), p2.get_untracked());
        key.set(String::new());
        p1.set(String::new());
        p2.set(String::new());
        #[cfg(target_arch = "wasm32")]
        leptos::task::spawn_local(async move {
            note.set(match actions::import_existing(console, k, a, b).await {
                Ok(()) => Note::None,
                Err(f) => Note::Fail(f),
            });
        });
        #[cfg(not(target_arch = "wasm32"))]
        let _ = (console, k, a, b);
    };
    view! {
        <form class="card" id="existing-form" on:submit=submit>
            <h2>{t!(i18n, sign_in.existing_title)}</h2>
            <p class="hint" id="existing-hint">{t!(i18n, sign_in.existing_hint)}</p>
            <label for="existing-key">{t!(i18n, sign_in.existing_key)}</label>
            <textarea id="existing-key" rows="4" required autocomplete="off" spellcheck="false"
                aria-describedby="existing-hint" translate="no" bind:value=key></textarea>
            <label for="existing-pass1">{t!(i18n, sign_in.passphrase)}</label>
            <input id="existing-pass1" type="password" autocomplete="new-password" required bind:value=p1 />
            <label for="existing-pass2">{t!(i18n, sign_in.passphrase_again)}</label>
            <input id="existing-pass2" type="password" autocomplete="new-password" required bind:value=p2 />
            <button type="submit" id="import-existing">{t!(i18n, sign_in.existing_import)}</button>
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
        let p = pass.get_untracked();
        pass.set(String::new());
        #[cfg(target_arch = "wasm32")]
        if let Some(input) = file_ref.get_untracked() {
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
        let _ = (console, file_ref, p);
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
        let p = pass.get_untracked();
        pass.set(String::new());
        #[cfg(target_arch = "wasm32")]
        leptos::task::spawn_local(async move {
            note.set(match actions::unlock(console, p).await {
                Ok(()) => Note::None,
                Err(f) => Note::Fail(f),
            });
        });
        #[cfg(not(target_arch = "wasm32"))]
        let _ = (console, p);
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
    // After a refused enrolment: the same key, enrolled again with the token (kept on screen
    // while the new attempt runs, so what was typed stays).
    let refused = Memo::new(move |shown: Option<&bool>| {
        note.with(|n| match n {
            Note::Busy => shown.copied().unwrap_or(false),
            Note::Enrol(e) => !matches!(e, Enrol::Enrolled | Enrol::Pending),
            _ => false,
        })
    });
    let who2 = who.clone();
    // In the static demo the only key the console holds is the demo key (docs/static-demo.md).
    let demo = in_demo();
    view! {
        <div class="card" id="key-held">
            <h2 id="key-unlocked">{t!(i18n, sign_in.unlocked, who = move || who2.clone())}</h2>
            {demo.then(|| view! { <p class="note" id="demo-key-held">{t!(i18n, sign_in.demo_key_held)}</p> })}
            <dl>
                <dt>{t!(i18n, sign_in.key_id)}</dt>
                <dd><code>{key_id}</code></dd>
                <dt>{t!(i18n, sign_in.public_key)}</dt>
                <dd><code class="hash">{public}</code></dd>
            </dl>
            // The demo key has no key file: nothing to export, lock (no passphrase to unlock it
            // with) or remove; it is gone on reload.
            {(!demo).then(|| view! {
                <div class="actions">
                    <button type="button" id="export" on:click=export>{t!(i18n, sign_in.export)}</button>
                    <button type="button" id="lock" on:click=lock>{t!(i18n, sign_in.lock)}</button>
                    <button type="button" id="forget" on:click=forget>{t!(i18n, sign_in.forget)}</button>
                </div>
            })}
        </div>
        {move || refused.get().then(|| view! { <EnrolAgain note /> })}
    }
}

/// Enrols the unlocked key again, with the token this time (after a refused enrolment).
#[component]
fn EnrolAgain(note: RwSignal<Note>) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let token = RwSignal::new(kept().token.unwrap_or_default());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let k = token.get_untracked();
        note.set(Note::Busy);
        #[cfg(target_arch = "wasm32")]
        leptos::task::spawn_local(async move {
            note.set(Note::Enrol(actions::enrol_again(console, k).await));
        });
        #[cfg(not(target_arch = "wasm32"))]
        let _ = (console, k);
    };
    view! {
        <form class="card" id="enrol-again-form" on:submit=submit>
            <h2>{t!(i18n, sign_in.enrol_again_title)}</h2>
            <label for="enrol-again-token">{t!(i18n, sign_in.token)}</label>
            <input id="enrol-again-token" type="password" autocomplete="off" spellcheck="false"
                aria-describedby="enrol-again-hint" bind:value=token />
            <p class="hint" id="enrol-again-hint">{t!(i18n, sign_in.token_hint)}</p>
            <button type="submit" id="enrol-again" class="primary">{t!(i18n, sign_in.enrol_again)}</button>
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_enrolment_refusal_is_told_apart() {
        let doc = |code: &str, extra: &str| format!(r#"{{"code":"{code}","message":"m"{extra}}}"#);
        assert_eq!(enrol_outcome(201, b"{}"), Enrol::Enrolled);
        assert_eq!(enrol_outcome(200, b""), Enrol::Enrolled);
        assert_eq!(
            enrol_outcome(403, doc("AUTH_FORBIDDEN", "").as_bytes()),
            Enrol::Forbidden(Some("m".into()))
        );
        assert_eq!(enrol_outcome(403, b"forbidden"), Enrol::Forbidden(None));
        // An Organization that confirms each key: waiting, not refused.
        assert_eq!(enrol_outcome(202, b"{}"), Enrol::Pending);
        // The server's words are shown only when short and plain.
        let long = format!(
            r#"{{"code":"AUTH_FORBIDDEN","message":"{}"}}"#,
            "x".repeat(301)
        );
        assert_eq!(enrol_outcome(403, long.as_bytes()), Enrol::Forbidden(None));
        // A 403 for another reason is not blamed on the token.
        assert_eq!(
            enrol_outcome(403, doc("MEMBERSHIP_REQUIRED", "").as_bytes()),
            Enrol::Refused("HTTP 403 MEMBERSHIP_REQUIRED".into())
        );
        assert_eq!(
            enrol_outcome(
                429,
                doc("RATE_LIMITED", r#","retryAfterMs":1500"#).as_bytes()
            ),
            Enrol::RateLimited(Some(2))
        );
        assert_eq!(
            enrol_outcome(
                429,
                doc("RATE_LIMITED", r#","retryAfterMs":"soon""#).as_bytes()
            ),
            Enrol::RateLimited(None)
        );
        assert_eq!(
            enrol_outcome(409, doc("INVALID_COMMAND", "").as_bytes()),
            Enrol::Full
        );
        // Other answers say their status and code, never the raw body.
        assert_eq!(
            enrol_outcome(404, b"<html>not here</html>"),
            Enrol::Refused("HTTP 404".into())
        );
        assert_eq!(
            enrol_outcome(500, doc("INTERNAL_ERROR", "").as_bytes()),
            Enrol::Refused("HTTP 500 INTERNAL_ERROR".into())
        );
    }

    #[test]
    fn the_enrolment_sends_the_public_half_and_the_trimmed_token_only() {
        let seed = wasm_core::crypto::SecretSeed::take(&mut [9u8; 32]);
        let public = seed.public_key();
        let members = |body: &str| -> Vec<String> {
            let v: serde_json::Value = serde_json::from_str(body).expect("json");
            v.as_object().expect("object").keys().cloned().collect()
        };
        let with = enrol_body("urn:p", "urn:k", &public, "  tok-EN_123\n");
        assert_eq!(
            members(&with),
            ["keyId", "principalId", "publicKey", "token"]
        );
        assert!(with.contains(r#""token":"tok-EN_123""#), "{with}");
        assert!(with.contains(&wasm_core::encoding::b64url_encode(&public)));
        assert!(!with.contains(seed.to_b64url().as_str()));
        // No token typed: the member is left out (the server answers 403, explained).
        let without = enrol_body("urn:p", "urn:k", &public, " ");
        assert_eq!(members(&without), ["keyId", "principalId", "publicKey"]);
    }
}

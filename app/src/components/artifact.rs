//! One Artifact hash of a final Mission approval, with "Fetch and verify" (§13, E-2: verify
//! `contentHash` on every retrieval; a URI is never identity). The content is fetched from the
//! server's Artifact store (`GET /api/artifacts/{hash}`), hashed here in WASM with the protocol
//! core's own [`sha256_hash`], and shown only when it matches: as plain text in a `<pre>`,
//! capped, never as markup or an action (content informs the decision, it authorizes nothing).
//! A mismatch is an alarm and nothing of the bytes is shown. The store serves an Artifact only to
//! a member of its Group, so the read is signed with the unlocked key (`web::signed_get`);
//! without one the button asks to sign in first and fetches nothing.

use crate::components::ident::Id;
use crate::i18n::*;
use crate::state::{Console, KeyState, use_console};
use leptos::prelude::*;
use wasm_core::encoding::sha256_hash;
use wasm_core::views::approvals::ArtifactFacts;

/// The most of a content's text shown in the preview.
pub const PREVIEW_BYTES: usize = 20 * 1024;

/// Where a fetch-and-verify stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    Idle,
    Fetching,
    /// The bytes hash to the Artifact's hash: their text (capped; `cut` when it was).
    Matches {
        text: String,
        cut: bool,
    },
    /// The bytes do not hash to the Artifact's hash: nothing of them is kept.
    Mismatch,
    /// Not fetched (unknown to the store, refused, or the network failed).
    Unavailable(String),
    /// Not fetched: no key is unlocked to sign the read with.
    SignInFirst,
}

/// Whether `hash` is `sha256:` and 64 lower-case hex digits (the only thing put in the URL).
pub fn well_formed(hash: &str) -> bool {
    wasm_core::encoding::is_sha256_hash(hash)
}

/// Verifies fetched `bytes` against `hash`; a match keeps at most [`PREVIEW_BYTES`] of their
/// text, cut at a character boundary.
pub fn verify(hash: &str, bytes: &[u8]) -> Check {
    if sha256_hash(bytes) != hash {
        return Check::Mismatch;
    }
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= PREVIEW_BYTES {
        return Check::Matches {
            text: text.into_owned(),
            cut: false,
        };
    }
    let mut end = PREVIEW_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Check::Matches {
        text: text[..end].to_owned(),
        cut: true,
    }
}

/// What a signed Artifact read answered: the bytes verified, or why there are none (a 404 is
/// also what a non-member gets, like an unknown hash).
pub fn answered(hash: &str, status: u16, body: &[u8]) -> Check {
    if status == 200 {
        verify(hash, body)
    } else {
        Check::Unavailable(crate::web::http_error(status, body))
    }
}

/// Fetches `hash`'s content from the server's Artifact store, signed with the unlocked key, and
/// verifies it into `state`; nothing while a fetch of it is under way.
pub fn fetch_and_verify(console: Console, hash: String, state: RwSignal<Check>) {
    if state.get_untracked() == Check::Fetching {
        return;
    }
    if !well_formed(&hash) {
        state.set(Check::Unavailable(hash));
        return;
    }
    let Some((signer, key_id)) = console.credentials() else {
        state.set(Check::SignInFirst);
        return;
    };
    state.set(Check::Fetching);
    leptos::task::spawn_local(async move {
        let path = format!("/api/artifacts/{hash}");
        let next = match crate::web::signed_get(&path, &signer, &key_id).await {
            Ok((status, body)) => answered(&hash, status, &body),
            Err(e) => Check::Unavailable(e),
        };
        state.set(next);
    });
}

/// Whether a key is unlocked to sign Artifact reads with (the buttons say so when not).
fn signed_in(console: Console) -> bool {
    console.key.with(|k| matches!(k, KeyState::Unlocked { .. }))
}

/// How many of a submission's Artifacts match their hash, do not, and are being fetched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub matches: usize,
    pub mismatches: usize,
    pub fetching: usize,
}

impl Tally {
    pub fn of<'a>(checks: impl IntoIterator<Item = &'a Check>) -> Tally {
        let mut t = Tally::default();
        for c in checks {
            t.count(c);
        }
        t
    }

    /// Counts one more Artifact's check.
    pub fn count(&mut self, c: &Check) {
        match c {
            Check::Matches { .. } => self.matches += 1,
            Check::Mismatch => self.mismatches += 1,
            Check::Fetching => self.fetching += 1,
            Check::Idle | Check::Unavailable(_) | Check::SignInFirst => {}
        }
    }
}

/// Whether "verify all" fetches this Artifact again: every one that does not match yet (a
/// mismatch too: altered bytes on the way are checked again, never shown).
pub fn needs_check(c: &Check) -> bool {
    !matches!(c, Check::Matches { .. } | Check::Fetching)
}

/// "Fetch and verify all N" over a submission's Artifacts, with how many match so far: an
/// approver checks every hash in one click instead of one button each.
#[component]
pub fn VerifyAll(checks: Vec<(String, RwSignal<Check>)>) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let n = checks.len();
    let run_on = checks.clone();
    let run = move |_: leptos::ev::MouseEvent| {
        for (hash, state) in &run_on {
            if state.with_untracked(needs_check) {
                fetch_and_verify(console, hash.clone(), *state);
            }
        }
    };
    let tally = Memo::new(move |_| {
        // Read in place: a matching Check holds its preview text, not to be copied per update.
        let mut t = Tally::default();
        for (_, s) in &checks {
            s.with(|c| t.count(c));
        }
        t
    });
    // (A named closure: a bare `>` in an attribute would end the tag in `view!`.)
    let busy = move || tally.get().fetching != 0;
    view! {
        <div class="verify-all"
            data-ok=move || tally.get().matches.to_string()
            data-bad=move || tally.get().mismatches.to_string()>
            <button type="button" class="fetch-verify-all" on:click=run
                prop:disabled=busy
                aria-busy=move || busy().to_string()>
                {move || if signed_in(console) {
                    t!(i18n, approvals.fetch_verify_all, n = move || n).into_any()
                } else {
                    t!(i18n, approvals.fetch_sign_in).into_any()
                }}
            </button>
            <p class="verify-summary" role="status">
                {move || {
                    let t = tally.get();
                    (t.matches + t.mismatches > 0).then(|| view! {
                        <span class="icon" aria-hidden="true">{if t.mismatches > 0 { "✗" } else if t.matches == n { "✓" } else { "…" }}</span>" "
                        {t!(i18n, approvals.artifacts_checked, ok = move || t.matches, n = move || n)}
                        {(t.mismatches > 0).then(|| view! {
                            " · "<strong class="bad">{t!(i18n, approvals.artifacts_mismatched, bad = move || t.mismatches, n = move || n)}</strong>
                        })}
                    })
                }}
            </p>
        </div>
    }
}

/// An Artifact hash with its fetch-and-verify button and result; `state` is the caller's when
/// a [`VerifyAll`] drives it too.
#[component]
pub fn ArtifactHash(
    hash: String,
    #[prop(optional)] facts: Option<ArtifactFacts>,
    #[prop(optional)] state: Option<RwSignal<Check>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let console = use_console();
    let state = state.unwrap_or_else(|| RwSignal::new(Check::Idle));
    let target = hash.clone();
    let fetch = move |_: leptos::ev::MouseEvent| fetch_and_verify(console, target.clone(), state);
    let fetching = move || state.with(|s| *s == Check::Fetching);
    let state_attr = move || match state.with(|s| s.clone()) {
        Check::Idle => "idle",
        Check::Fetching => "fetching",
        Check::Matches { .. } => "matches",
        Check::Mismatch => "mismatch",
        Check::Unavailable(_) => "unavailable",
        Check::SignInFirst => "sign-in-first",
    };
    let hash_attr = hash.clone();
    view! {
        <li class="artifact" data-hash=hash_attr data-check=state_attr>
            // What the hash is first, from its manifest in the log: the WorkItem that published
            // it, the media type, the classification and the producer; then the hash itself.
            {facts.filter(|f| f.media_type.is_some()).map(|f| view! {
                <p class="artifact-facts">
                    {f.work_item_goal.map(|g| view! { <span class="goal" translate="no">{g}</span>" · " })}
                    <code class="media-type">{f.media_type}</code>
                    {f.classification.map(|c| view! { " · "<code class="classification">{c}</code> })}
                    {f.producer.map(|p| view! { " · "{t!(i18n, approvals.produced_by)}" "<Id id=p /> })}
                </p>
            })}
            <code class="hash">{hash}</code>" "
            <button type="button" class="fetch-verify" on:click=fetch
                prop:disabled=fetching aria-busy=move || fetching().to_string()>
                {move || if signed_in(console) {
                    t!(i18n, approvals.fetch_verify).into_any()
                } else {
                    t!(i18n, approvals.fetch_sign_in).into_any()
                }}
            </button>
            {move || match state.get() {
                Check::Idle => ().into_any(),
                Check::Fetching => view! {
                    <p class="artifact-check fetching" role="status">
                        <span class="icon" aria-hidden="true">"…"</span>" "{t!(i18n, approvals.artifact_fetching)}
                    </p>
                }
                .into_any(),
                Check::Matches { text, cut } => view! {
                    <div class="artifact-check matches" role="status">
                        <p>
                            <span class="icon" aria-hidden="true">"✓"</span>" "{t!(i18n, approvals.artifact_matches)}
                        </p>
                        <p class="hint">{t!(i18n, approvals.artifact_content_note)}</p>
                        <pre class="artifact-preview" translate="no" tabindex="0">{text}</pre>
                        {cut.then(|| view! {
                            <p class="hint artifact-cut">{t!(i18n, approvals.artifact_cut, kib = move || PREVIEW_BYTES / 1024)}</p>
                        })}
                    </div>
                }
                .into_any(),
                Check::Mismatch => view! {
                    <p class="artifact-check mismatch" role="alert">
                        <span class="icon" aria-hidden="true">"✗"</span>" "{t!(i18n, approvals.artifact_mismatch)}
                    </p>
                }
                .into_any(),
                Check::Unavailable(detail) => view! {
                    <p class="artifact-check unavailable" role="status">
                        {t!(i18n, approvals.artifact_unavailable, detail = move || detail.clone())}
                    </p>
                }
                .into_any(),
                Check::SignInFirst => view! {
                    <p class="artifact-check unavailable" role="status">
                        {t!(i18n, approvals.artifact_sign_in_first)}" "
                        <a href="/sign-in">{t!(i18n, nav.sign_in)}</a>
                    </p>
                }
                .into_any(),
            }}
        </li>
    }
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn matching_content_is_kept_as_text_and_a_mismatch_keeps_nothing() {
        let bytes =
            b"Implement the checkout service\nby urn:missionweaveprotocol:agent:developer\n";
        let hash = sha256_hash(bytes);
        assert!(well_formed(&hash));
        assert_eq!(
            verify(&hash, bytes),
            Check::Matches {
                text: String::from_utf8_lossy(bytes).into_owned(),
                cut: false
            }
        );
        assert_eq!(
            verify(&hash, b"Implement something else\n"),
            Check::Mismatch
        );
        assert_eq!(verify(&sha256_hash(b"other"), bytes), Check::Mismatch);
    }

    #[test]
    fn a_long_text_is_cut_at_a_character_boundary() {
        // 3-byte characters: the cap falls inside one.
        let text = "雜".repeat(PREVIEW_BYTES / 3 + 10);
        let hash = sha256_hash(text.as_bytes());
        match verify(&hash, text.as_bytes()) {
            Check::Matches { text: shown, cut } => {
                assert!(cut);
                assert!(shown.len() <= PREVIEW_BYTES && shown.len() > PREVIEW_BYTES - 3);
                assert!(shown.chars().all(|c| c == '雜'));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn verify_all_counts_each_outcome_and_checks_again_all_but_a_match() {
        let checks = [
            Check::Matches {
                text: String::new(),
                cut: false,
            },
            Check::Mismatch,
            Check::Mismatch,
            Check::Fetching,
            Check::Idle,
            Check::Unavailable("404".into()),
            Check::SignInFirst,
        ];
        assert_eq!(
            Tally::of(&checks),
            Tally {
                matches: 1,
                mismatches: 2,
                fetching: 1
            }
        );
        let again: Vec<bool> = checks.iter().map(needs_check).collect();
        assert_eq!(again, vec![false, true, true, false, true, true, true]);
        assert_eq!(Tally::of(&[]), Tally::default());
    }

    #[test]
    fn only_a_200_answer_is_verified_and_a_refusal_says_its_code() {
        let bytes = b"content";
        let hash = sha256_hash(bytes);
        assert!(matches!(answered(&hash, 200, bytes), Check::Matches { .. }));
        // A non-member and an unknown hash both get 404; a missing signature 401. The body of
        // a refusal is never taken as content, even when it would match.
        let doc = br#"{"code":"AUTH_REQUIRED","message":"sign the request"}"#;
        assert_eq!(
            answered(&hash, 401, doc),
            Check::Unavailable("HTTP 401 AUTH_REQUIRED".into())
        );
        assert_eq!(
            answered(&hash, 404, bytes),
            Check::Unavailable("HTTP 404".into())
        );
        assert_eq!(answered(&hash, 200, b"altered"), Check::Mismatch);
    }

    #[test]
    fn only_a_sha256_hash_goes_into_the_url() {
        let good = sha256_hash(b"x");
        assert!(well_formed(&good));
        for bad in [
            "",
            "sha256:",
            &good.to_uppercase(),
            &format!("{good}/../x"),
            "sha256:../../api/commands",
        ] {
            assert!(!well_formed(bad), "{bad}");
        }
    }
}

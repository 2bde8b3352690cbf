//! One Artifact hash of a final Mission approval, with "Fetch and verify" (§13, E-2: verify
//! `contentHash` on every retrieval; a URI is never identity). The content is fetched from the
//! server's Artifact store (`GET /api/artifacts/{hash}`), hashed here in WASM with the protocol
//! core's own [`sha256_hash`], and shown only when it matches: as plain text in a `<pre>`,
//! capped, never as markup or an action (content informs the decision, it authorizes nothing).
//! A mismatch is an alarm and nothing of the bytes is shown.

use crate::components::ident::Id;
use crate::i18n::*;
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

/// An Artifact hash with its fetch-and-verify button and result.
#[component]
pub fn ArtifactHash(hash: String, #[prop(optional)] facts: Option<ArtifactFacts>) -> impl IntoView {
    let i18n = use_i18n();
    let state = RwSignal::new(Check::Idle);
    let target = hash.clone();
    let fetch = move |_: leptos::ev::MouseEvent| {
        if state.get_untracked() == Check::Fetching {
            return;
        }
        if !well_formed(&target) {
            state.set(Check::Unavailable(target.clone()));
            return;
        }
        state.set(Check::Fetching);
        let h = target.clone();
        leptos::task::spawn_local(async move {
            let next = match crate::web::get_bytes(&format!("/api/artifacts/{h}")).await {
                Ok(bytes) => verify(&h, &bytes),
                Err(e) => Check::Unavailable(e),
            };
            state.set(next);
        });
    };
    let fetching = move || state.with(|s| *s == Check::Fetching);
    let state_attr = move || match state.with(|s| s.clone()) {
        Check::Idle => "idle",
        Check::Fetching => "fetching",
        Check::Matches { .. } => "matches",
        Check::Mismatch => "mismatch",
        Check::Unavailable(_) => "unavailable",
    };
    let hash_attr = hash.clone();
    view! {
        <li class="artifact" data-hash=hash_attr data-check=state_attr>
            <code class="hash">{hash}</code>" "
            <button type="button" class="fetch-verify" on:click=fetch
                prop:disabled=fetching aria-busy=move || fetching().to_string()>
                {t!(i18n, approvals.fetch_verify)}
            </button>
            // What the hash is, from its manifest in the log: the WorkItem that published it,
            // the media type, the classification and the producer.
            {facts.filter(|f| f.media_type.is_some()).map(|f| view! {
                <p class="artifact-facts">
                    {f.work_item_goal.map(|g| view! { <span class="goal" translate="no">{g}</span>" · " })}
                    <code class="media-type">{f.media_type}</code>
                    {f.classification.map(|c| view! { " · "<code class="classification">{c}</code> })}
                    {f.producer.map(|p| view! { " · "{t!(i18n, approvals.produced_by)}" "<Id id=p /> })}
                </p>
            })}
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

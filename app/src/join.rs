//! The join link the server prints at start (`/join#token=…&name=…`, issue 26): it carries the
//! development Organization's enrolment token in the fragment, which never reaches a server log.
//! Opening it keeps the token and the name for this tab (`sessionStorage`: a reload keeps them,
//! another tab or a later visit does not), and replaces the address with `/sign-in` so the token
//! leaves the address bar and the history.

/// The in-app path of the join link.
pub const PATH: &str = "/join";
/// Where the join link lands once its fragment is taken.
pub const SIGN_IN: &str = "/sign-in";
/// `sessionStorage` key of the enrolment token.
pub const TOKEN_KEY: &str = "missionweave.console.join.token";
/// `sessionStorage` key of the name.
pub const NAME_KEY: &str = "missionweave.console.join.name";
/// The longest token kept, in bytes: the server's are 22+ base64url characters; a hostile link
/// must not fill the tab's storage or the form.
pub const MAX_TOKEN_BYTES: usize = 256;
/// The longest name kept, in bytes (a development name is at most 40, `dev_identity`).
pub const MAX_NAME_BYTES: usize = 64;

/// What a join link's fragment carries; a part absent, empty, malformed or too long is `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Join {
    pub token: Option<String>,
    pub name: Option<String>,
}

/// Reads `token=…&name=…` (with or without the leading `#`, in any order, URL-encoded as a
/// form: `%XX` and `+` for a space); the first occurrence of each wins, other members are
/// ignored.
pub fn parse_fragment(fragment: &str) -> Join {
    let fragment = fragment.strip_prefix('#').unwrap_or(fragment);
    let mut out = Join::default();
    let (mut seen_token, mut seen_name) = (false, false);
    for part in fragment.split('&') {
        let (key, raw) = part.split_once('=').unwrap_or((part, ""));
        let (seen, slot, max) = match key {
            "token" => (&mut seen_token, &mut out.token, MAX_TOKEN_BYTES),
            "name" => (&mut seen_name, &mut out.name, MAX_NAME_BYTES),
            _ => continue,
        };
        if std::mem::replace(seen, true) {
            continue;
        }
        // An encoded value is at most three bytes per decoded byte: cut hostile lengths early.
        if raw.len() > max * 3 {
            continue;
        }
        *slot = decode(raw)
            .filter(|v| !v.is_empty() && v.len() <= max && !v.chars().any(char::is_control));
    }
    out
}

/// Decodes one form-encoded value; `None` for a broken `%` escape or bytes that are not UTF-8.
fn decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// At start, before the router reads the address: if the page is the join link, keeps its token
/// and name for this tab and replaces the address (and its history entry) with `/sign-in`.
/// Returns whether it did.
pub fn take_from_address() -> bool {
    let Some(w) = crate::web::window() else {
        return false;
    };
    let location = w.location();
    if location.pathname().ok().as_deref() != Some(PATH) {
        return false;
    }
    let join = parse_fragment(&location.hash().unwrap_or_default());
    keep(&join);
    if let Ok(h) = w.history() {
        let _ = h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(SIGN_IN));
    }
    true
}

/// Keeps what a join link carried for this tab (a part it lacks leaves the kept one alone).
fn keep(join: &Join) {
    if let Some(t) = &join.token {
        crate::web::session_set(TOKEN_KEY, t);
    }
    if let Some(n) = &join.name {
        crate::web::session_set(NAME_KEY, n);
    }
}

/// The token and name kept for this tab, to prefill the Sign-in form.
pub fn kept() -> Join {
    Join {
        token: crate::web::session_get(TOKEN_KEY).filter(|t| t.len() <= MAX_TOKEN_BYTES),
        name: crate::web::session_get(NAME_KEY).filter(|n| n.len() <= MAX_NAME_BYTES),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join(token: Option<&str>, name: Option<&str>) -> Join {
        Join {
            token: token.map(str::to_owned),
            name: name.map(str::to_owned),
        }
    }

    #[test]
    fn both_parts_in_either_order_with_or_without_the_hash() {
        let want = join(Some("AbC-_0123456789xyzXYZ9"), Some("mission-owner"));
        for f in [
            "#token=AbC-_0123456789xyzXYZ9&name=mission-owner",
            "token=AbC-_0123456789xyzXYZ9&name=mission-owner",
            "#name=mission-owner&token=AbC-_0123456789xyzXYZ9",
            "#other=1&name=mission-owner&&token=AbC-_0123456789xyzXYZ9&x",
        ] {
            assert_eq!(parse_fragment(f), want, "{f}");
        }
    }

    #[test]
    fn values_are_url_decoded() {
        assert_eq!(
            parse_fragment("#token=a%2Bb%2Fc%3D&name=mission%2downer"),
            join(Some("a+b/c="), Some("mission-owner"))
        );
        assert_eq!(
            parse_fragment("#name=%E9%9B%9C+x"),
            join(None, Some("雜 x"))
        );
    }

    #[test]
    fn missing_empty_or_broken_parts_are_none() {
        assert_eq!(parse_fragment(""), Join::default());
        assert_eq!(parse_fragment("#"), Join::default());
        assert_eq!(parse_fragment("#token=abc"), join(Some("abc"), None));
        assert_eq!(parse_fragment("#name=bob"), join(None, Some("bob")));
        assert_eq!(parse_fragment("#token=&name"), Join::default());
        // A broken escape, a lone `%`, bytes that are not UTF-8, a control character.
        assert_eq!(parse_fragment("#token=%G1&name=%"), Join::default());
        assert_eq!(parse_fragment("#token=ab%2&name=%E9%9B"), Join::default());
        assert_eq!(parse_fragment("#token=a%0Ab&name=b%00"), Join::default());
        // The first occurrence wins, even when it is unusable.
        assert_eq!(
            parse_fragment("#token=one&token=two&name=%ZZ&name=bob"),
            join(Some("one"), None)
        );
    }

    #[test]
    fn hostile_lengths_are_dropped() {
        let at_most = "t".repeat(MAX_TOKEN_BYTES);
        let over = "t".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(
            parse_fragment(&format!("#token={at_most}")),
            join(Some(&at_most), None)
        );
        assert_eq!(parse_fragment(&format!("#token={over}")), Join::default());
        // Encoded, short enough raw but too long decoded; and a megabyte of escapes.
        let encoded = "%41".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(
            parse_fragment(&format!("#token={encoded}")),
            Join::default()
        );
        let huge = "%41".repeat(1 << 20);
        assert_eq!(
            parse_fragment(&format!("#token={huge}&name=bob")),
            join(None, Some("bob"))
        );
        let long_name = "n".repeat(MAX_NAME_BYTES + 1);
        assert_eq!(
            parse_fragment(&format!("#name={long_name}&token=ok")),
            join(Some("ok"), None)
        );
    }
}

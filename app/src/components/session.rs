//! The page's one socket client (browser only), created on first use; its notices update the
//! console state.

use crate::commands::{Author, SignedCommand};
use crate::state::Console;
#[cfg(target_arch = "wasm32")]
use crate::state::Via;
#[cfg(target_arch = "wasm32")]
use leptos::prelude::{GetUntracked, Set, SetValue, WithValue};
use std::sync::Arc;
use wasm_core::crypto::ed25519::Signer;
use wasm_core::crypto::registry::ValidatedRegistry;

#[cfg(target_arch = "wasm32")]
use crate::socket::page as imp;
pub use crate::socket::page::stop;

/// Connects as the unlocked key's Principal, or (the static demo before anyone signs in) as
/// the visitor key's, read-only (`components::visitor`). A start with another identity closes
/// the session open before it: the demo key replaces the visitor's session, none is left open.
pub fn start(console: Console, principal_id: String, key_id: String, signer: Arc<Signer>) {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::socket::RegistryCheck;
        use crate::socket::browser::Client;
        use crate::socket::machine::Identity;
        let client = imp::CLIENT.with(|c| {
            c.borrow_mut()
                .get_or_insert_with(|| {
                    Client::new(move |n| console.apply(n), move |h| console.set_held(h))
                })
                .clone()
        });
        for g in imp::WATCHED.with(|w| w.borrow().clone()) {
            client.watch(g);
        }
        let registry = imp::REGISTRY.with(|r| r.borrow().clone());
        client.set_registry(RegistryCheck { registry });
        let who = principal_id.clone();
        let (signer_for_poll, key_for_poll) = (signer.clone(), key_id.clone());
        client.start(
            Identity {
                principal_id,
                key_id,
            },
            signer,
        );
        // Which Groups to follow: the binding has no "my Groups" frame (§16), so the
        // development Organization lists them (`GET /api/groups/…`, a signed read), now and
        // every 15 s while signed in (a Mission created since, a Membership granted since).
        console.groups.set(crate::state::GroupsState::Loading);
        let generation = imp::POLL.with(|p| {
            p.set(p.get().wrapping_add(1));
            p.get()
        });
        leptos::task::spawn_local(async move {
            let path = format!("/api/groups/{who}");
            loop {
                let listed =
                    match crate::web::signed_get(&path, &signer_for_poll, &key_for_poll).await {
                        Ok((status, body)) => groups_of(status, &body),
                        Err(e) => Err(e),
                    };
                let stopped = imp::POLL.with(|p| p.get()) != generation
                    || !matches!(
                        console.key.get_untracked(),
                        crate::state::KeyState::Unlocked { principal_id, .. }
                            | crate::state::KeyState::Visiting { principal_id, .. }
                            if principal_id == who
                    );
                if stopped {
                    break;
                }
                match listed {
                    Ok(list) => {
                        for g in &list {
                            watch(g.clone());
                        }
                        console.groups.set(crate::state::GroupsState::Listed(list));
                    }
                    Err(e) => console.groups.set(crate::state::GroupsState::Failed(e)),
                }
                crate::web::sleep_ms(15_000).await;
            }
        });
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (console, principal_id, key_id, signer);
}

/// The Groups a `GET /api/groups/…` answer lists (`{"groups": [...]}`), or why there are
/// none to show: a refusal, a body that is not that shape.
pub fn groups_of(status: u16, body: &[u8]) -> Result<Vec<String>, String> {
    if status != 200 {
        return Err(crate::web::http_error(status, body));
    }
    let v = wasm_core::json::parse(body).map_err(|e| e.to_string())?;
    match v.pointer("/groups") {
        Some(wasm_core::json::Value::Array(list)) => list
            .iter()
            .map(|g| {
                g.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| "a Group ID is not a string".to_owned())
            })
            .collect(),
        _ => Err("no \"groups\" list".to_owned()),
    }
}

/// Follows a Group (e.g. the Mission view's), now or as soon as a session starts.
pub fn watch(group_id: String) {
    #[cfg(target_arch = "wasm32")]
    {
        imp::WATCHED.with(|w| {
            let mut w = w.borrow_mut();
            if !w.contains(&group_id) {
                w.push(group_id.clone());
            }
        });
        imp::CLIENT.with(|c| {
            if let Some(c) = c.borrow().as_ref() {
                c.watch(group_id);
            }
        });
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = group_id;
}

/// Sends one of the human's signed Commands: a `COMMAND` on the live session, else (the socket
/// is down) `POST /api/commands` with the same bytes (binding.md; both reach the same
/// authority queue). The outcome is matched by Action ID ([`Console::settle`]).
pub fn send_command(console: Console, item: String, command: SignedCommand, author: Author) {
    #[cfg(target_arch = "wasm32")]
    leptos::task::spawn_local(async move {
        // The receipt is checked against the author's key: a key enrolled after the Registry
        // was fetched (a browser key generated just now) needs a fresh copy first.
        let known = console.verifier.with_value(|r| {
            r.as_ref()
                .is_some_and(|r| r.bindings().any(|b| b.key_id == author.key_id))
        });
        if !known && let Ok(r) = crate::components::registry::fetch().await {
            console.verifier.set_value(Some(r.clone()));
            set_registry(r);
        }
        let client = imp::CLIENT.with(|c| c.borrow().clone());
        match client.filter(|c| c.is_live()) {
            Some(c) => {
                console.record_sent(item, command.clone(), author, Via::Socket);
                c.command(command.action_id, command.text);
            }
            None => {
                console.record_sent(item, command.clone(), author, Via::Http);
                post_command(console, command).await;
            }
        }
    });
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (console, item, command, author);
}

/// `POST /api/commands` with the Command's exact bytes; also used to send the same bytes again
/// after a network failure (an exact retry returns the original Events, §15.1).
pub async fn post_command(console: Console, command: SignedCommand) {
    let id = command.action_id.clone();
    match crate::web::post_json("/api/commands", &command.text).await {
        Ok((status, body)) => match crate::commands::http_outcome(status, &body) {
            Ok(outcome) => console.settle(&id, outcome),
            Err(e) => console.fail(&id, e),
        },
        Err(e) => console.fail(&id, e),
    }
    #[cfg(target_arch = "wasm32")]
    imp::CLIENT.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            c.forget(id);
        }
    });
}

/// Keeps the Registry for verification (also for a client created later).
pub fn set_registry(registry: ValidatedRegistry) {
    #[cfg(target_arch = "wasm32")]
    {
        imp::REGISTRY.with(|r| *r.borrow_mut() = Some(registry.clone()));
        imp::CLIENT.with(|c| {
            if let Some(c) = c.borrow().as_ref() {
                c.set_registry(crate::socket::RegistryCheck {
                    registry: Some(registry),
                });
            }
        });
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = registry;
}

/// The Registry kept for verification, if it has been fetched (an imported key is looked up in
/// it: its binding names the Principal and the key ID).
pub fn registry() -> Option<ValidatedRegistry> {
    #[cfg(target_arch = "wasm32")]
    {
        imp::REGISTRY.with(|r| r.borrow().clone())
    }
    #[cfg(not(target_arch = "wasm32"))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_answer_gives_its_groups_and_an_empty_one_none() {
        assert_eq!(
            groups_of(200, br#"{"groups":["urn:a:g1","urn:a:g2"]}"#),
            Ok(vec!["urn:a:g1".to_owned(), "urn:a:g2".to_owned()])
        );
        // No Membership yet: an empty list, which the board explains.
        assert_eq!(groups_of(200, br#"{"groups":[]}"#), Ok(Vec::new()));
    }

    #[test]
    fn a_refused_or_malformed_answer_is_a_failure_not_an_empty_list() {
        let unsigned = br#"{"code":"AUTH_REQUIRED","message":"sign","retryable":false}"#;
        assert_eq!(
            groups_of(401, unsigned),
            Err("HTTP 401 AUTH_REQUIRED".to_owned())
        );
        assert_eq!(groups_of(403, b""), Err("HTTP 403".to_owned()));
        for body in [
            &b"not json"[..],
            br#"{"groups":{}}"#,
            br#"{"groups":[1]}"#,
            b"{}",
        ] {
            assert!(groups_of(200, body).is_err(), "{body:?}");
        }
    }
}

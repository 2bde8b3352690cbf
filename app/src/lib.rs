//! MissionWeave console front end.
//!
//! This crate is a placeholder: the Leptos console (client-side rendered, built for
//! `wasm32-unknown-unknown` and served by `weave-console serve`) arrives in a later issue.
//! Until then the console is the static page in `public/index.html`, styled by
//! `style/console.css`.

//! Moving about the drawn DAG: zoom and pan (buttons, wheel, keys, dragging), selecting a node
//! by click or key, following a child Mission's link in the app, and the few DOM touches the
//! graph's markup needs between drawings (`aria-pressed`, focus, lease countdowns). Node
//! elements are found by their index-based DOM ids, never by protocol ids.

use super::{max_zoom, node_dom_id, when};
use crate::i18n::Locale;
use leptos::prelude::*;
use leptos_i18n::I18nContext;
use wasm_bindgen::JsCast;
use wasm_core::authority::Micros;
use wasm_core::views::layout::{LiveLayout, Sugiyama};

/// The view's zoom (relative to the start zoom `base`), pan and drag, with the handlers of
/// the `<svg>` and the toolbar. Every field is a reactive handle: the struct is `Copy`.
#[derive(Clone, Copy)]
pub struct Viewport {
    pub zoom: RwSignal<f64>,
    pub pan: RwSignal<(f64, f64)>,
    /// The zoom a small graph starts at (its fitted text readable on a phone).
    pub base: Memo<f64>,
    /// The on-screen scale of the layout fitted to the frame.
    pub fitted: Memo<f64>,
    /// The node focused when a key was pressed (focused again if the drawing is replaced).
    pub refocus: StoredValue<Option<String>>,
    dragging: StoredValue<Option<(i32, i32)>>,
}

impl Viewport {
    pub fn new(fitted: Memo<f64>, base: Memo<f64>) -> Viewport {
        Viewport {
            zoom: RwSignal::new(1.0),
            pan: RwSignal::new((0.0, 0.0)),
            base,
            fitted,
            refocus: StoredValue::new(None),
            dragging: StoredValue::new(None),
        }
    }

    /// The most zoom allowed, relative to `base`.
    fn most(&self) -> f64 {
        max_zoom(self.fitted.get_untracked()) / self.base.get_untracked()
    }

    pub fn zoom_in(&self) {
        let most = self.most();
        self.zoom.update(|z| *z = (*z * 1.25).min(most));
    }

    pub fn zoom_out(&self) {
        self.zoom.update(|z| *z = (*z / 1.25).max(0.2));
    }

    pub fn reset(&self) {
        self.zoom.set(1.0);
        self.pan.set((0.0, 0.0));
    }

    /// The scale the `<g>` is drawn at.
    pub fn scale(&self) -> f64 {
        self.base.get() * self.zoom.get()
    }

    /// `+` `-` `0`, arrows, Escape (lets go of the selected node) and Enter or Space on a node
    /// (selects it); anything else is left to the browser.
    pub fn key(&self, ev: &leptos::ev::KeyboardEvent, selected: RwSignal<Option<String>>) {
        let step = 40.0 / (self.base.get_untracked() * self.zoom.get_untracked());
        self.refocus.set_value(node_target(ev));
        let pan = self.pan;
        match ev.key().as_str() {
            "+" | "=" => self.zoom_in(),
            "-" => self.zoom_out(),
            "0" => self.reset(),
            "ArrowLeft" => pan.update(|p| p.0 += step),
            "ArrowRight" => pan.update(|p| p.0 -= step),
            "ArrowUp" => pan.update(|p| p.1 += step),
            "ArrowDown" => pan.update(|p| p.1 -= step),
            // Escape lets go of the selected node (the table lists every WorkItem again).
            "Escape" if selected.with_untracked(Option::is_some) => selected.set(None),
            // Enter or Space on a node selects it (delegated from the node).
            "Enter" | " " => match node_target(ev) {
                Some(id) => selected.set(Some(id)),
                None => return,
            },
            _ => return,
        }
        ev.prevent_default();
    }

    pub fn wheel(&self, ev: &leptos::ev::WheelEvent) {
        ev.prevent_default();
        let f = if ev.delta_y() < 0.0 { 1.1 } else { 1.0 / 1.1 };
        let max = self.most();
        // Not `f64::clamp`: it panics when `max` < 0.2, and its panic message alone brings
        // `<f64 as Debug>` (Grisu and Dragon, about 9 KB gzip) into the module.
        self.zoom.update(|z| *z = (*z * f).min(max).max(0.2));
    }

    pub fn press(&self, ev: &leptos::ev::PointerEvent) {
        self.dragging
            .set_value(Some((ev.client_x(), ev.client_y())));
    }

    pub fn release(&self) {
        self.dragging.set_value(None);
    }

    /// Pans by the pointer's move while a button is held.
    pub fn drag(&self, ev: &leptos::ev::PointerEvent) {
        if let Some((x, y)) = self.dragging.get_value() {
            let z = self.base.get_untracked() * self.zoom.get_untracked();
            self.pan.update(|p| {
                p.0 += f64::from(ev.client_x() - x) / z;
                p.1 += f64::from(ev.client_y() - y) / z;
            });
            self.dragging
                .set_value(Some((ev.client_x(), ev.client_y())));
        }
    }
}

/// A click in the graph: a child Mission's link followed in the app, or a node selected.
///
/// A child Mission's node is an SVG `<a>` in markup the router never sees: left alone, the
/// browser would load the page anew and the unlocked key would be locked again. A plain click
/// follows it in the app; a modified one (new tab) is the browser's.
pub fn click(
    ev: &leptos::ev::MouseEvent,
    selected: RwSignal<Option<String>>,
    navigate: impl Fn(&str),
) {
    if !(ev.ctrl_key() || ev.meta_key() || ev.shift_key() || ev.alt_key() || ev.button() != 0)
        && let Some(href) = link_target(ev)
    {
        ev.prevent_default();
        navigate(&href);
        return;
    }
    if let Some(id) = node_target(ev) {
        selected.set(Some(id));
    }
}

/// Moves every lease countdown of the WorkItem table to `now` (their text only).
pub fn tick_countdowns(i18n: I18nContext<Locale>, now: Micros) {
    let Some(list) = crate::web::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector_all("table.work-items time.countdown").ok())
    else {
        return;
    };
    for k in 0..list.length() {
        let Some(el) = list.item(k) else { continue };
        let at = el
            .dyn_ref::<web_sys::Element>()
            .and_then(|e| e.get_attribute("data-at"))
            .and_then(|a| a.parse::<i64>().ok());
        if let Some(at) = at {
            el.set_text_content(Some(&when(i18n, Micros(at), now)));
        }
    }
}

/// The DAG node id of the node element an event happened in, if it is a selectable one.
fn node_target(ev: &web_sys::Event) -> Option<String> {
    let el: web_sys::Element = ev.target()?.dyn_into().ok()?;
    el.closest("[data-node-id][role=button]")
        .ok()??
        .get_attribute("data-node-id")
}

/// The in-app path of the child-Mission link (`/mission/…`) an event happened in, if any.
fn link_target(ev: &web_sys::Event) -> Option<String> {
    let el: web_sys::Element = ev.target()?.dyn_into().ok()?;
    el.closest("a[href]")
        .ok()??
        .get_attribute("href")
        .filter(|h| h.starts_with("/mission/"))
}

/// Focuses the element `id` (an SVG element's `focus`, called by name: web-sys binds it on
/// `HTMLElement` only).
pub fn focus_element(id: &str) {
    let Some(el) = crate::web::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
    else {
        return;
    };
    if let Ok(f) = js_sys::Reflect::get(&el, &"focus".into())
        && let Ok(f) = f.dyn_into::<js_sys::Function>()
    {
        let _ = f.call0(&el);
    }
}

/// Sets `aria-pressed` on the drawn node `id` (if drawn and selectable).
pub fn set_pressed(l: &LiveLayout<Sugiyama>, id: Option<&str>, pressed: bool) {
    let Some(vi) = id.and_then(|id| l.nodes.iter().position(|n| n.id == id)) else {
        return;
    };
    if let Some(el) = crate::web::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(&node_dom_id(vi)))
        && el.has_attribute("aria-pressed")
    {
        let _ = el.set_attribute("aria-pressed", if pressed { "true" } else { "false" });
    }
}

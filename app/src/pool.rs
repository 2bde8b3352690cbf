//! Web Workers for the first replay (issue 13): verification on every core the browser has.
//!
//! Each worker is a module worker (`pkg/<hash>/worker.js`, written by `scripts/build-web.sh`
//! next to `boot.js`; no inline script, the CSP's `worker-src 'self'`) that loads the SAME
//! content-hashed `app.js` + `app_bg.wasm` as the page and answers messages with
//! [`worker_message`]:
//!
//! - `{registry: Uint8Array}`: Registry-fixture JSON (`GET /api/registry`'s shape), read and
//!   validated in the worker by the same Organization-wide checks as on the page (§6.4 stage 4);
//!   answer `{ready: true}` or `{error}`;
//! - `{chunk, bytes: Uint8Array, ends: Uint32Array}`: a chunk of Event texts (transferred, not
//!   copied); answer `{chunk, verdicts}`, one per Event: its signing hash (a string) when all six
//!   stages hold, else `[stage, reason]` ([`crate::replay::verify_chunk`]).
//!
//! - `{chunk, frames: true, bytes, ends}`: a chunk of the socket's held frame texts (the
//!   socket's backlog, [`crate::socket::backlog`]); answer `{chunk, verdicts}` with `null` for a
//!   frame that is not an `EVENT` ([`crate::socket::backlog::verify_frames`]).
//!
//! The page ([`Pool::replay`]) keeps the bytes it sent, keeps up to two chunks in flight per
//! worker, and folds on its own thread in receiving order as answers come back
//! ([`crate::replay::Pipeline`]): folding chunk n while the workers verify the next ones. An
//! answer that is not exactly one verdict per Event, a worker's `{error}`, or a worker that dies
//! sends its chunks to this thread's own verification: nothing is ever applied unverified, and
//! the replay ends even with no worker left.
//!
//! A worker that neither answers nor errors (hung), at its start or on a chunk, is caught by a
//! watchdog
//! ([`crate::replay::Watchdog`], checked every second): once its oldest chunk is past
//! [`crate::replay::WATCHDOG_BASE_MS`] plus a per-Event allowance it gets a `Failed` reply, so it
//! is retired exactly as a worker that errors, and whatever it answers later is ignored. The
//! base can be lowered for tests with the `localStorage` key
//! `missionweave.console.workerTimeoutMs`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use js_sys::{Array, Object, Reflect, Uint8Array, Uint32Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_core::crypto::registry::ValidatedRegistry;

use crate::fold::EventLog;
use crate::replay::{
    Pipeline, Verdict, WATCHDOG_BASE_MS, WATCHDOG_PER_EVENT_MS, Watchdog, stage_named, verify_chunk,
};
use crate::socket::backlog::{FrameVerdict, verify_frames};

thread_local! {
    /// The worker's Registry (set by the `{registry}` message; a worker without one refuses
    /// every Event at stage 4).
    static WORKER_REGISTRY: RefCell<Option<ValidatedRegistry>> = const { RefCell::new(None) };
}

fn get(o: &JsValue, key: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

fn object(members: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in members {
        let _ = Reflect::set(&o, &JsValue::from_str(k), v);
    }
    o.into()
}

fn error_reply(message: &str) -> JsValue {
    object(&[("error", JsValue::from_str(message))])
}

/// The worker's side: one message in, its answer out (`worker.js` posts it back). Runs in the
/// worker's own instance of the module.
#[wasm_bindgen]
pub fn worker_message(data: JsValue) -> JsValue {
    let registry = get(&data, "registry");
    if let Some(bytes) = registry.dyn_ref::<Uint8Array>() {
        return match crate::components::registry::parse(&bytes.to_vec()) {
            Ok(r) => {
                WORKER_REGISTRY.with(|w| *w.borrow_mut() = Some(r));
                object(&[("ready", JsValue::TRUE)])
            }
            Err(e) => error_reply(&format!("Registry: {e}")),
        };
    }
    let chunk = get(&data, "chunk");
    let (Some(bytes), Some(ends)) = (
        get(&data, "bytes")
            .dyn_ref::<Uint8Array>()
            .map(Uint8Array::to_vec),
        get(&data, "ends")
            .dyn_ref::<Uint32Array>()
            .map(Uint32Array::to_vec),
    ) else {
        return error_reply("not a chunk");
    };
    let mut docs = Vec::with_capacity(ends.len());
    let mut start = 0usize;
    for end in ends {
        let end = end as usize;
        match bytes.get(start..end) {
            Some(doc) => docs.push(doc),
            None => return error_reply("chunk offsets out of range"),
        }
        start = end;
    }
    let verdicts: Vec<Option<Verdict>> = if get(&data, "frames").is_truthy() {
        WORKER_REGISTRY.with(|w| verify_frames(&docs, w.borrow().as_ref()))
    } else {
        WORKER_REGISTRY
            .with(|w| verify_chunk(&docs, w.borrow().as_ref()))
            .into_iter()
            .map(Some)
            .collect()
    };
    let out = Array::new_with_length(u32::try_from(verdicts.len()).unwrap_or(0));
    for (i, v) in verdicts.into_iter().enumerate() {
        let js = match v {
            None => JsValue::NULL,
            Some(Verdict::Verified { signing_hash }) => JsValue::from_str(&signing_hash),
            Some(Verdict::Refused { stage, reason }) => Array::of2(
                &JsValue::from_str(stage.as_str()),
                &JsValue::from_str(&reason),
            )
            .into(),
        };
        out.set(u32::try_from(i).unwrap_or(u32::MAX), js);
    }
    object(&[("chunk", chunk), ("verdicts", out.into())])
}

/// Reads a worker's answer to a chunk of frames: `null` is a frame without a verdict.
fn read_frames_answer(data: &JsValue) -> Option<(usize, Vec<FrameVerdict>)> {
    let chunk = get(data, "chunk").as_f64()?;
    let list = get(data, "verdicts").dyn_into::<Array>().ok()?;
    let verdicts = list
        .iter()
        .map(|v| {
            if v.is_null() {
                return Some(None);
            }
            if let Some(hash) = v.as_string() {
                return Some(Some(Verdict::Verified { signing_hash: hash }));
            }
            let pair = v.dyn_into::<Array>().ok()?;
            Some(Some(Verdict::Refused {
                stage: stage_named(&pair.get(0).as_string()?)?,
                reason: pair.get(1).as_string().unwrap_or_default(),
            }))
        })
        .collect::<Option<Vec<_>>>()?;
    (chunk >= 0.0 && chunk.fract() == 0.0).then_some((chunk as usize, verdicts))
}

/// Reads a worker's answer: the chunk number and its verdicts; `None` for anything else.
fn read_answer(data: &JsValue) -> Option<(usize, Vec<Verdict>)> {
    let chunk = get(data, "chunk").as_f64()?;
    let list = get(data, "verdicts").dyn_into::<Array>().ok()?;
    let verdicts = list
        .iter()
        .map(|v| {
            if let Some(hash) = v.as_string() {
                return Some(Verdict::Verified { signing_hash: hash });
            }
            let pair = v.dyn_into::<Array>().ok()?;
            Some(Verdict::Refused {
                stage: stage_named(&pair.get(0).as_string()?)?,
                reason: pair.get(1).as_string().unwrap_or_default(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    (chunk >= 0.0 && chunk.fract() == 0.0).then_some((chunk as usize, verdicts))
}

/// Workers to start: `navigator.hardwareConcurrency` (at least 1). The page's own thread folds
/// meanwhile, so on a machine with N cores, N workers + the page is one more thread than
/// cores; folding is the lighter part and mostly waits.
pub fn default_size() -> usize {
    crate::web::window()
        .map(|w| w.navigator().hardware_concurrency())
        .filter(|n| n.is_finite() && *n >= 1.0)
        .map_or(1, |n| n as usize)
        .clamp(1, 16)
}

/// `pkg/<hash>/worker.js`: beside the page's `boot.js` (the same content-hashed directory, so
/// the workers load the very module the page runs).
pub fn worker_url() -> Option<String> {
    let doc = crate::web::window()?.document()?;
    let src = doc
        .query_selector("script[type=module][src$='/boot.js']")
        .ok()??
        .get_attribute("src")?;
    Some(format!("{}worker.js", src.strip_suffix("boot.js")?))
}

pub enum Reply {
    Message(JsValue),
    /// The worker failed to load or threw (its `error` event).
    Failed(String),
}

#[derive(Default)]
struct Inbox {
    replies: VecDeque<(usize, Reply)>,
    wake: Option<js_sys::Function>,
}

struct Slot {
    worker: web_sys::Worker,
    /// Chunks sent and not answered, oldest first (a worker answers in order).
    in_flight: VecDeque<usize>,
    alive: bool,
    _on_message: Closure<dyn FnMut(web_sys::MessageEvent)>,
    _on_error: Closure<dyn FnMut(web_sys::Event)>,
}

/// A started pool of verification workers (terminated when dropped).
pub struct Pool {
    slots: Vec<Slot>,
    inbox: Rc<RefCell<Inbox>>,
    watchdog: Rc<RefCell<Watchdog>>,
    /// The interval that checks the watchdog (its handle and callback), cleared when dropped.
    tick: Option<(i32, Closure<dyn FnMut()>)>,
}

/// How often the watchdog is checked (the deadlines are seconds long).
const WATCHDOG_TICK_MS: i32 = 1_000;

impl Drop for Pool {
    fn drop(&mut self) {
        if let (Some((handle, _)), Some(w)) = (&self.tick, crate::web::window()) {
            w.clear_interval_with_handle(*handle);
        }
        for s in &self.slots {
            s.worker.terminate();
        }
        // Wakes whoever awaits this pool's [`Replies`] (it then sees the pool is gone).
        deliver(
            &self.inbox,
            usize::MAX,
            Reply::Failed("the pool stopped".into()),
        );
    }
}

/// A pool's replies, awaited without holding the pool (the socket client keeps the pool in its
/// state and borrows it only between awaits).
pub struct Replies(Rc<RefCell<Inbox>>);

impl Replies {
    /// The next reply from any worker (`usize::MAX`: the pool was dropped).
    pub async fn next(&self) -> (usize, Reply) {
        loop {
            if let Some(r) = self.0.borrow_mut().replies.pop_front() {
                return r;
            }
            let inbox = self.0.clone();
            let p = js_sys::Promise::new(&mut |resolve, _| {
                inbox.borrow_mut().wake = Some(resolve);
            });
            let _ = JsFuture::from(p).await;
        }
    }
}

/// What a reply means for the socket's backlog.
pub enum FramesAnswer {
    /// A full answer for chunk `n`, one verdict per held input.
    Chunk(usize, Vec<FrameVerdict>),
    /// These chunks will get no worker's answer (their worker failed or answered wrongly): they
    /// are checked on the page.
    Lost(Vec<usize>),
    /// Nothing for the backlog.
    Nothing,
}

/// Most chunks one worker holds at a time: one being verified, one queued behind it so that it
/// never waits for the page.
const IN_FLIGHT: usize = 2;

impl Pool {
    /// Starts `size` workers from `url` and gives each the Registry (fixture JSON bytes); waits
    /// until each answered or was retired by the watchdog (no answer within
    /// [`WATCHDOG_BASE_MS`]). An error when not one worker is ready (the caller then verifies on
    /// its own thread).
    pub async fn start(url: &str, size: usize, registry_fixture: &[u8]) -> Result<Pool, String> {
        let inbox = Rc::new(RefCell::new(Inbox::default()));
        let base_ms = crate::web::local_get("missionweave.console.workerTimeoutMs")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
            .unwrap_or(WATCHDOG_BASE_MS);
        let mut pool = Pool {
            slots: Vec::new(),
            inbox: inbox.clone(),
            watchdog: Rc::new(RefCell::new(Watchdog::new(base_ms, WATCHDOG_PER_EVENT_MS))),
            tick: None,
        };
        let options = web_sys::WorkerOptions::new();
        options.set_type(web_sys::WorkerType::Module);
        for i in 0..size.max(1) {
            let worker = web_sys::Worker::new_with_options(url, &options)
                .map_err(|e| crate::web::js_error(&e))?;
            let on_message = {
                let inbox = inbox.clone();
                Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
                    deliver(&inbox, i, Reply::Message(e.data()));
                })
            };
            let on_error = {
                let inbox = inbox.clone();
                Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
                    e.prevent_default();
                    let message = get(&e, "message")
                        .as_string()
                        .unwrap_or_else(|| "the worker failed".into());
                    deliver(&inbox, i, Reply::Failed(message));
                })
            };
            worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
            worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
            let msg = object(&[("registry", Uint8Array::from(registry_fixture).into())]);
            worker
                .post_message(&msg)
                .map_err(|e| crate::web::js_error(&e))?;
            pool.watchdog
                .borrow_mut()
                .starting(i, crate::web::perf_now());
            pool.slots.push(Slot {
                worker,
                in_flight: VecDeque::new(),
                alive: false,
                _on_message: on_message,
                _on_error: on_error,
            });
        }
        // The watchdog runs from the start: a worker that never answers its Registry is
        // retired after `WATCHDOG_BASE_MS` (a `Failed` reply), so the start always ends.
        pool.arm_watchdog();
        let mut answered = vec![false; pool.slots.len()];
        let mut last_error = String::new();
        while answered.iter().any(|a| !a) {
            let (i, reply) = pool.next().await;
            // One answer per worker: a late `{ready}` after the watchdog's `Failed` is not one.
            match answered.get_mut(i) {
                Some(a) if !*a => *a = true,
                _ => continue,
            }
            let ready = match reply {
                Reply::Message(m) if get(&m, "ready").is_truthy() => pool
                    .watchdog
                    .borrow_mut()
                    .started(i, crate::web::perf_now()),
                Reply::Message(m) => {
                    last_error = get(&m, "error").as_string().unwrap_or_default();
                    false
                }
                Reply::Failed(e) => {
                    last_error = e;
                    false
                }
            };
            if ready {
                if let Some(slot) = pool.slots.get_mut(i) {
                    slot.alive = true;
                }
            } else {
                pool.kill(i);
            }
        }
        if pool.alive() == 0 {
            return Err(format!("no worker started: {last_error}"));
        }
        Ok(pool)
    }

    /// Checks the watchdog every [`WATCHDOG_TICK_MS`]: an overdue worker gets a `Failed` reply
    /// (handled as any failed worker: retired, its chunks verified on the page).
    fn arm_watchdog(&mut self) {
        let Some(w) = crate::web::window() else {
            return;
        };
        let (inbox, watchdog) = (self.inbox.clone(), self.watchdog.clone());
        let cb = Closure::<dyn FnMut()>::new(move || {
            let overdue = watchdog.borrow_mut().expire(crate::web::perf_now());
            for (i, _) in overdue {
                deliver(&inbox, i, Reply::Failed("no answer in time".into()));
            }
        });
        if let Ok(handle) = w.set_interval_with_callback_and_timeout_and_arguments_0(
            cb.as_ref().unchecked_ref(),
            WATCHDOG_TICK_MS,
        ) {
            self.tick = Some((handle, cb));
        }
    }

    /// Worker `i` is no longer trusted: terminated, nothing more for it.
    fn kill(&mut self, i: usize) {
        self.watchdog.borrow_mut().retire(i);
        if let Some(slot) = self.slots.get_mut(i) {
            slot.alive = false;
            slot.worker.terminate();
        }
    }

    /// This pool's replies ([`Replies`]).
    pub fn replies(&self) -> Replies {
        Replies(self.inbox.clone())
    }

    /// Sends chunk `n` of the socket's held frames to the live worker with the fewest chunks in
    /// flight. False when no worker took it (the caller checks it on the page).
    pub fn send_frames(&mut self, n: usize, texts: &[&[u8]]) -> bool {
        let mut bytes = Vec::with_capacity(texts.iter().map(|d| d.len()).sum());
        let mut ends = Vec::with_capacity(texts.len());
        for d in texts {
            bytes.extend_from_slice(d);
            match u32::try_from(bytes.len()) {
                Ok(e) => ends.push(e),
                Err(_) => return false,
            }
        }
        loop {
            let Some(i) = (0..self.slots.len())
                .filter(|i| self.slots[*i].alive)
                .min_by_key(|i| self.slots[*i].in_flight.len())
            else {
                return false;
            };
            let b = Uint8Array::from(&bytes[..]);
            let e = Uint32Array::from(&ends[..]);
            let msg = object(&[
                ("chunk", JsValue::from_f64(n as f64)),
                ("frames", JsValue::TRUE),
                ("bytes", b.clone().into()),
                ("ends", e.clone().into()),
            ]);
            let transfer = Array::of2(&b.buffer(), &e.buffer());
            let slot = &mut self.slots[i];
            if slot
                .worker
                .post_message_with_transfer(&msg, &transfer)
                .is_ok()
            {
                slot.in_flight.push_back(n);
                self.watchdog
                    .borrow_mut()
                    .sent(i, n, texts.len(), crate::web::perf_now());
                return true;
            }
            // This worker cannot take messages: its other chunks are lost too.
            self.kill(i);
        }
    }

    /// Chunks sent to workers that are no longer alive (to check on the page).
    pub fn orphans(&mut self) -> Vec<usize> {
        self.slots
            .iter_mut()
            .filter(|s| !s.alive)
            .flat_map(|s| std::mem::take(&mut s.in_flight))
            .collect()
    }

    /// Reads worker `i`'s reply to a chunk of frames. A worker that failed, or answered anything
    /// but a full answer to the chunk it was sent, is not trusted with more.
    pub fn frames_reply(&mut self, i: usize, reply: Reply) -> FramesAnswer {
        if i >= self.slots.len() {
            return FramesAnswer::Nothing;
        }
        let answer = match &reply {
            Reply::Message(m) if !get(m, "error").is_truthy() => read_frames_answer(m),
            _ => None,
        };
        // The watchdog takes only a live worker's answer to its oldest chunk (not a late one).
        let now = crate::web::perf_now();
        let slot = &mut self.slots[i];
        match answer {
            Some((n, verdicts))
                if slot.in_flight.front() == Some(&n)
                    && self.watchdog.borrow_mut().answered(i, n, now) =>
            {
                slot.in_flight.pop_front();
                FramesAnswer::Chunk(n, verdicts)
            }
            _ => {
                let lost = std::mem::take(&mut slot.in_flight).into();
                self.kill(i);
                FramesAnswer::Lost(lost)
            }
        }
    }

    /// Workers that answer.
    pub fn alive(&self) -> usize {
        self.slots.iter().filter(|s| s.alive).count()
    }

    /// The next answer (or failure) from any worker.
    async fn next(&self) -> (usize, Reply) {
        loop {
            if let Some(r) = self.inbox.borrow_mut().replies.pop_front() {
                return r;
            }
            let inbox = self.inbox.clone();
            let p = js_sys::Promise::new(&mut |resolve, _| {
                inbox.borrow_mut().wake = Some(resolve);
            });
            let _ = JsFuture::from(p).await;
        }
    }

    /// Sends chunk `n` of `texts` (its range in `p`) to worker `i`.
    fn send<T: AsRef<[u8]>>(&mut self, i: usize, n: usize, p: &Pipeline, texts: &[T]) -> bool {
        let Some(slot) = self.slots.get_mut(i) else {
            return false;
        };
        let docs = &texts[p.range(n)];
        let mut bytes = Vec::with_capacity(docs.iter().map(|d| d.as_ref().len()).sum());
        let mut ends = Vec::with_capacity(docs.len());
        for d in docs {
            bytes.extend_from_slice(d.as_ref());
            match u32::try_from(bytes.len()) {
                Ok(e) => ends.push(e),
                Err(_) => return false,
            }
        }
        let bytes = Uint8Array::from(&bytes[..]);
        let ends = Uint32Array::from(&ends[..]);
        let msg = object(&[
            ("chunk", JsValue::from_f64(n as f64)),
            ("bytes", bytes.clone().into()),
            ("ends", ends.clone().into()),
        ]);
        let transfer = Array::of2(&bytes.buffer(), &ends.buffer());
        if slot
            .worker
            .post_message_with_transfer(&msg, &transfer)
            .is_err()
        {
            return false;
        }
        slot.in_flight.push_back(n);
        self.watchdog
            .borrow_mut()
            .sent(i, n, docs.len(), crate::web::perf_now());
        true
    }

    /// The replay of `texts` (Event texts in receiving order) into `log`, verified by the
    /// workers and folded here in order (module documentation). `progress` is called after
    /// each fold step; the page yields to the browser (a frame) at least every 40 ms of folding.
    pub async fn replay<T: AsRef<[u8]>>(
        &mut self,
        texts: &[T],
        registry: Option<&ValidatedRegistry>,
        log: &mut EventLog,
        chunk: usize,
        progress: &mut dyn FnMut(&Pipeline),
    ) -> Pipeline {
        let mut p = Pipeline::new(texts.len(), chunk);
        let mut next_send = 0usize;
        loop {
            // Keep every live worker fed.
            for i in 0..self.slots.len() {
                while self.slots[i].alive
                    && self.slots[i].in_flight.len() < IN_FLIGHT
                    && next_send < p.chunks()
                {
                    if self.send(i, next_send, &p, texts) {
                        next_send += 1;
                    } else {
                        self.retire(i, &mut p, texts, registry);
                    }
                }
            }
            if self.alive() == 0 {
                // No worker left: the rest is verified here.
                while next_send < p.chunks() {
                    verify_here(&mut p, next_send, texts, registry);
                    next_send += 1;
                }
            }
            let slice = crate::web::perf_now();
            while p.ready() {
                p.fold_next(texts, log);
                if crate::web::perf_now() - slice > 40.0 {
                    progress(&p);
                    crate::web::next_frame().await;
                    break;
                }
            }
            progress(&p);
            if p.done() {
                return p;
            }
            if p.ready() {
                continue;
            }
            let (i, reply) = self.next().await;
            match reply {
                // A worker that threw (or lost its Registry) is not trusted with more chunks.
                Reply::Message(m) if get(&m, "error").is_truthy() => {
                    self.retire(i, &mut p, texts, registry);
                }
                Reply::Message(m) => {
                    let Some(n) = self.slots.get_mut(i).and_then(|s| s.in_flight.pop_front())
                    else {
                        continue;
                    };
                    if !self
                        .watchdog
                        .borrow_mut()
                        .answered(i, n, crate::web::perf_now())
                    {
                        // Overdue (its `Failed` reply is queued): not taken, retired now.
                        if let Some(s) = self.slots.get_mut(i) {
                            s.in_flight.push_front(n);
                        }
                        self.retire(i, &mut p, texts, registry);
                        continue;
                    }
                    let taken = read_answer(&m)
                        .filter(|(c, _)| *c == n)
                        .is_some_and(|(_, v)| p.arrived(n, v).is_ok());
                    if !taken && !p.answered(n) {
                        // Not a full answer for the chunk sent: verified here instead.
                        verify_here(&mut p, n, texts, registry);
                    }
                }
                Reply::Failed(_) => self.retire(i, &mut p, texts, registry),
            }
        }
    }

    /// Worker `i` is dead: no more chunks for it, and its unanswered ones are verified here.
    fn retire<T: AsRef<[u8]>>(
        &mut self,
        i: usize,
        p: &mut Pipeline,
        texts: &[T],
        registry: Option<&ValidatedRegistry>,
    ) {
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        let chunks = std::mem::take(&mut slot.in_flight);
        self.kill(i);
        for n in chunks {
            if !p.answered(n) {
                verify_here(p, n, texts, registry);
            }
        }
    }
}

fn deliver(inbox: &Rc<RefCell<Inbox>>, i: usize, reply: Reply) {
    let wake = {
        let mut b = inbox.borrow_mut();
        b.replies.push_back((i, reply));
        b.wake.take()
    };
    if let Some(f) = wake {
        let _ = f.call0(&JsValue::NULL);
    }
}

/// Chunk `n` verified on this thread (the fallback for one chunk).
fn verify_here<T: AsRef<[u8]>>(
    p: &mut Pipeline,
    n: usize,
    texts: &[T],
    registry: Option<&ValidatedRegistry>,
) {
    let docs: Vec<&[u8]> = texts[p.range(n)].iter().map(AsRef::as_ref).collect();
    let _ = p.arrived(n, verify_chunk(&docs, registry));
}

/// The replay on this thread alone, chunk by chunk, yielding a frame every 40 ms: what runs
/// when no worker can be started, and the "pool off" row of the benchmark.
pub async fn replay_here<T: AsRef<[u8]>>(
    texts: &[T],
    registry: Option<&ValidatedRegistry>,
    log: &mut EventLog,
    chunk: usize,
    progress: &mut dyn FnMut(&Pipeline),
) -> Pipeline {
    let mut p = Pipeline::new(texts.len(), chunk);
    let mut slice = crate::web::perf_now();
    for n in 0..p.chunks() {
        verify_here(&mut p, n, texts, registry);
        p.fold_next(texts, log);
        if crate::web::perf_now() - slice > 40.0 {
            progress(&p);
            crate::web::next_frame().await;
            slice = crate::web::perf_now();
        }
    }
    progress(&p);
    p
}

//! The runner's module in a module worker (`pkg/<hash>/runner-worker.js`, written by
//! `scripts/build-web.sh` beside `worker.js`): it answers `{ready}` once `runner_bg.wasm` is
//! compiled (or `{error}`), then `{report}` (or `{error}`) to the framed files, or to an audit
//! bundle (`{audit}`) after `{progress: [done, total]}` messages. Used by the Protocol view
//! (`routes::protocol`: the official bundles) and by `components::audit_verify` (an audit
//! bundle): a module of its own, so that neither imports the other.

use js_sys::{Array, ArrayBuffer, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

pub struct Runner(web_sys::Worker);

impl Drop for Runner {
    fn drop(&mut self) {
        self.0.terminate();
    }
}

fn get(o: &JsValue, key: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

impl Runner {
    /// Starts the worker and waits until its module is ready.
    pub async fn load() -> Result<Runner, String> {
        let url = crate::pool::worker_url()
            .and_then(|u| Some(format!("{}runner-worker.js", u.strip_suffix("worker.js")?)))
            .ok_or("no boot.js script to find runner-worker.js by")?;
        let options = web_sys::WorkerOptions::new();
        options.set_type(web_sys::WorkerType::Module);
        let worker = web_sys::Worker::new_with_options(&url, &options)
            .map_err(|e| crate::web::js_error(&e))?;
        let runner = Runner(worker);
        runner.answer().await?;
        Ok(runner)
    }

    /// Runs the bundles over the framed files (transferred, not copied); the report's JSON.
    pub async fn run(&self, framed: Vec<u8>) -> Result<String, String> {
        let bytes = Uint8Array::from(framed.as_slice());
        self.0
            .post_message_with_transfer(&bytes, &Array::of1(&bytes.buffer()))
            .map_err(|e| crate::web::js_error(&e))?;
        self.report(&|_, _| {}).await
    }

    /// Verifies an audit bundle (its buffer transferred to the worker, never copied into
    /// the console's memory); `progress` hears (lines checked, lines in all) as the
    /// runner reports them; the verifier's JSON (`protocol_runner::audit_json`).
    pub async fn verify_audit(
        &self,
        bundle: &ArrayBuffer,
        progress: &dyn Fn(u64, u64),
    ) -> Result<String, String> {
        let message = Object::new();
        Reflect::set(
            &message,
            &JsValue::from_str("audit"),
            &Uint8Array::new(bundle),
        )
        .map_err(|e| crate::web::js_error(&e))?;
        self.0
            .post_message_with_transfer(&message, &Array::of1(bundle))
            .map_err(|e| crate::web::js_error(&e))?;
        self.report(progress).await
    }

    /// The worker's `{report}`, after any number of `{progress: [done, total]}`.
    async fn report(&self, progress: &dyn Fn(u64, u64)) -> Result<String, String> {
        loop {
            let data = self.answer().await?;
            let p = get(&data, "progress");
            if Array::is_array(&p) {
                let p = Array::from(&p);
                let n = |i| p.get(i).as_f64().map_or(0, |n| n as u64);
                progress(n(0), n(1));
                continue;
            }
            return get(&data, "report")
                .as_string()
                .ok_or_else(|| "the runner answered without a report".into());
        }
    }

    /// The worker's next message, or why there is none (its `{error}`, or its `error`
    /// event: the module did not load or threw). The next handler is set in a microtask
    /// after this one resolves, before the worker's next message is dispatched (a task),
    /// so no message is missed between two calls.
    async fn answer(&self) -> Result<JsValue, String> {
        let w = &self.0;
        let p = Promise::new(&mut |resolve: Function, reject: Function| {
            w.set_onmessage(Some(&resolve));
            w.set_onerror(Some(&reject));
        });
        let got = JsFuture::from(p).await;
        w.set_onmessage(None);
        w.set_onerror(None);
        match got {
            Ok(event) => {
                let data = get(&event, "data");
                match get(&data, "error").as_string() {
                    Some(e) => Err(e),
                    None => Ok(data),
                }
            }
            Err(event) => Err(get(&event, "message")
                .as_string()
                .unwrap_or_else(|| "runner-worker.js did not load".into())),
        }
    }
}

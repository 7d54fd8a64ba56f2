//! A scriptable A2A 1.0 agent (JSON-RPC binding). It serves the card,
//! SendStreamingMessage / SendMessage, GetTask, SubscribeToTask, the push config calls and
//! CancelTask, and sends webhook pushes like the official SDK does.
//!
//! The end-to-end tests drive it: each turn's script, every later state change, and the
//! misbehaviours (no push, refused registration, pushes that run ahead of GetTask, stale
//! or duplicate pushes, dropped subscriptions, -32004 on a terminal subscribe). The demo
//! gives it a [`Responder`] instead, and works on in the background (`demo-agent`).
//! `GET /changes` lists every state change with its time, so a demo can measure how long
//! each took to reach the parent.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::broadcast;

mod serve;
use serve::{authorize, card, changes, rand_id, rpc, status, with_parts};

pub const TERMINAL: [&str; 4] = [
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
];

#[derive(Clone, Debug)]
pub struct Behaviour {
    pub push_capable: bool,
    pub refuse_push_registration: bool,
    /// SubscribeToTask streams are closed after this long (None: kept open).
    pub drop_subscriptions_after: Option<Duration>,
    /// DeleteTaskPushNotificationConfig fails (the stand-in must end anyway).
    pub fail_deletes: bool,
    /// A turn's events go to its own stream only, not to open subscriptions.
    pub quiet_turns: bool,
    /// DeleteTaskPushNotificationConfig answers only after this long (a slow agent).
    pub slow_deletes: Option<Duration>,
    /// The card says `capabilities.streaming` (false: SendStreamingMessage and
    /// SubscribeToTask are refused with -32004, as an SDK does).
    pub streaming: bool,
    /// The card's interface URL (default: this agent's own).
    pub interface_url: Option<String>,
    /// Pads the card's description to this many bytes (a card too large to read).
    pub card_padding: usize,
    /// These JSON-RPC methods answer `307` to this URL instead of being served.
    pub redirect: Option<(Vec<String>, String)>,
    /// SendStreamingMessage answers a stream whose one data line never ends.
    pub endless_stream: bool,
    /// The next turns answer this JSON-RPC error message (-32603) instead of a stream.
    pub turn_error: Option<String>,
    /// CreateTaskPushNotificationConfig answers only after this long.
    pub slow_push_registration: Option<Duration>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Self {
            push_capable: true,
            refuse_push_registration: false,
            drop_subscriptions_after: None,
            fail_deletes: false,
            quiet_turns: false,
            slow_deletes: None,
            streaming: true,
            interface_url: None,
            card_padding: 0,
            redirect: None,
            endless_stream: false,
            turn_error: None,
            slow_push_registration: None,
        }
    }
}

#[derive(Clone, Debug)]
struct TaskRec {
    id: String,
    context_id: String,
    state: String,
    text: String,
    /// What GetTask shows: lags behind `state` when a push runs ahead.
    visible_state: String,
    visible_text: String,
    /// When the state last changed, as the status timestamp says (RFC 3339).
    changed_at: String,
    artifacts: Vec<Value>,
    /// Parts beside the status text (a form the question asks to fill, a sign-in link),
    /// as written.
    parts: Vec<Value>,
    turns: usize,
}

/// Now, as an A2A status timestamp.
fn now_rfc3339() -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    standin_wire::time::rfc3339(since.as_secs(), since.subsec_millis())
}

/// Answers a turn when no script is queued: (task id, turn number from 0, the user's text)
/// to the (state, text) pairs the turn streams.
pub type Responder = Arc<dyn Fn(&str, usize, &str) -> Vec<(String, String)> + Send + Sync>;

/// A turn that has been answered: the task, its number (from 0) and the user's text.
#[derive(Clone, Debug)]
pub struct TurnDone {
    pub task: String,
    pub turn: usize,
    pub text: String,
}

/// One state change the agent made, when (milliseconds since the Unix epoch).
#[derive(Clone, Debug)]
pub struct ChangeRecord {
    pub task: String,
    pub state: String,
    pub text: String,
    pub at_ms: u128,
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushConfig {
    pub id: String,
    pub url: String,
    pub token: String,
}

#[derive(Default)]
struct Inner {
    behaviour: Behaviour,
    tasks: HashMap<String, TaskRec>,
    /// Each turn streams these (state, text) pairs; the last one is where the turn stops.
    turns: Vec<Vec<(String, String)>>,
    configs: HashMap<String, Vec<PushConfig>>,
    calls: Vec<String>,
    /// Every message sent to the agent, as it arrived.
    messages: Vec<Value>,
    pushes_sent: Vec<(String, u16)>,
    deletes: Vec<String>,
    /// Deletes that have answered (a slow delete is in `deletes` from its start).
    deletes_answered: usize,
    responder: Option<Responder>,
    changes: Vec<ChangeRecord>,
    /// Every push token ever registered (configs are deleted when a stand-in ends).
    tokens: Vec<String>,
}

impl Inner {
    fn record(&mut self, task: &str, state: &str, text: &str) {
        self.changes.push(ChangeRecord {
            task: task.to_owned(),
            state: state.to_owned(),
            text: text.to_owned(),
            at_ms: now_ms(),
        });
    }
}

/// Counts a subscription as open for as long as its stream lives.
struct OpenGuard(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[derive(Clone)]
pub struct TestAgent {
    open: Arc<std::sync::atomic::AtomicUsize>,
    inner: Arc<Mutex<Inner>>,
    events: broadcast::Sender<(String, Value)>,
    turns_done: broadcast::Sender<TurnDone>,
    /// Set once the agent has died: the server stops and every open stream ends.
    dead: tokio::sync::watch::Sender<bool>,
    http: reqwest::Client,
    pub url: String,
}

fn lock(m: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl TestAgent {
    /// Listens on 127.0.0.1:`port` (0 for any); panics when it can't (test support).
    pub async fn start(port: u16, behaviour: Behaviour) -> Self {
        Self::try_start(port, behaviour)
            .await
            .unwrap_or_else(|e| panic!("test agent on port {port}: {e}"))
    }

    /// Listens on 127.0.0.1:`port` (0 for any).
    pub async fn try_start(port: u16, behaviour: Behaviour) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (events, _) = broadcast::channel(256);
        let (turns_done, _) = broadcast::channel(64);
        let (dead, _) = tokio::sync::watch::channel(false);
        let agent = Self {
            open: Arc::default(),
            inner: Arc::new(Mutex::new(Inner {
                behaviour,
                ..Inner::default()
            })),
            events,
            turns_done,
            dead,
            http: reqwest::Client::new(),
            url,
        };
        let app = Router::new()
            .route("/.well-known/agent-card.json", get(card))
            .route("/", post(rpc))
            .route("/changes", get(changes))
            .route("/authorize/{task}", get(authorize))
            .with_state(agent.clone());
        let mut died = agent.dead.subscribe();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = died.wait_for(|dead| *dead).await;
                })
                .await
        });
        Ok(agent)
    }

    /// The agent dies, as a process does: it stops listening, its open streams end and
    /// its idle connections close; nothing it knew is served again.
    pub fn die(&self) {
        self.dead.send_replace(true);
    }

    /// Changes how the agent behaves from now on.
    pub fn set_behaviour(&self, change: impl FnOnce(&mut Behaviour)) {
        change(&mut lock(&self.inner).behaviour);
    }

    /// Answers every turn that has no script queued.
    pub fn respond_with(&self, responder: Responder) {
        lock(&self.inner).responder = Some(responder);
    }

    /// Each answered turn, as it is answered.
    pub fn turns_done(&self) -> broadcast::Receiver<TurnDone> {
        self.turns_done.subscribe()
    }

    /// Every state change so far, oldest first.
    pub fn changes(&self) -> Vec<ChangeRecord> {
        lock(&self.inner).changes.clone()
    }

    /// The task's artifacts as it keeps them.
    pub fn task_artifacts(&self, task: &str) -> Vec<Value> {
        lock(&self.inner)
            .tasks
            .get(task)
            .map(|t| t.artifacts.clone())
            .unwrap_or_default()
    }

    /// The task's current state (None for an unknown task).
    pub fn state(&self, task: &str) -> Option<String> {
        lock(&self.inner).tasks.get(task).map(|t| t.state.clone())
    }

    /// Adds an artifact to the task, streams and pushes it (it carries no state).
    pub async fn add_artifact(&self, task: &str, name: &str, text: &str) {
        let artifact = json!({"artifactId": format!("a-{}", rand_id()), "name": name, "parts": [{"text": text}]});
        self.artifact_update(task, artifact, false, true).await;
    }

    /// An artifact update as A2A defines it, streamed, pushed and kept on the task:
    /// `append` adds its parts to the artifact of the same id, else it replaces (or adds)
    /// that artifact; `last_chunk` says it is whole.
    pub async fn artifact_update(
        &self,
        task: &str,
        artifact: Value,
        append: bool,
        last_chunk: bool,
    ) {
        let context = {
            let mut inner = lock(&self.inner);
            let Some(rec) = inner.tasks.get_mut(task) else {
                return;
            };
            let id = artifact["artifactId"].clone();
            match rec.artifacts.iter_mut().find(|a| a["artifactId"] == id) {
                Some(kept) if append => {
                    let parts = artifact["parts"].as_array().cloned().unwrap_or_default();
                    if let Some(list) = kept["parts"].as_array_mut() {
                        list.extend(parts);
                    }
                }
                Some(kept) => *kept = artifact.clone(),
                None => rec.artifacts.push(artifact.clone()),
            }
            rec.context_id.clone()
        };
        let event = json!({"artifactUpdate": {"taskId": task, "contextId": context, "artifact": artifact, "append": append, "lastChunk": last_chunk}});
        let _ = self.events.send((task.to_owned(), event.clone()));
        self.push(task, &event).await;
    }

    /// The states the next turn streams (the last is where it stops).
    pub fn script_turn(&self, states: &[(&str, &str)]) {
        lock(&self.inner).turns.push(
            states
                .iter()
                .map(|(s, t)| ((*s).to_owned(), (*t).to_owned()))
                .collect(),
        );
    }

    /// SubscribeToTask streams open right now.
    pub fn open_subscriptions(&self) -> usize {
        self.open.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn task_ids(&self) -> Vec<String> {
        lock(&self.inner).tasks.keys().cloned().collect()
    }

    /// The id of a task the agent was given, once it has one.
    pub async fn some_task(&self) -> String {
        loop {
            if let Some(task) = self.task_ids().pop() {
                return task;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// Once the agent has a task (the parent's first turn reached it), adds to it the
    /// artifact `name` holding `text`: what the agent makes while the parent answers.
    pub async fn make_while_asked(&self, name: &str, text: &str) {
        let task = self.some_task().await;
        self.add_artifact(&task, name, text).await;
    }

    pub fn calls(&self) -> Vec<String> {
        lock(&self.inner).calls.clone()
    }

    /// Every message sent to the agent (SendMessage, SendStreamingMessage), in order.
    pub fn messages(&self) -> Vec<Value> {
        lock(&self.inner).messages.clone()
    }

    pub fn count(&self, method: &str) -> usize {
        lock(&self.inner)
            .calls
            .iter()
            .filter(|c| c.as_str() == method)
            .count()
    }

    pub fn configs(&self, task: &str) -> Vec<PushConfig> {
        lock(&self.inner)
            .configs
            .get(task)
            .cloned()
            .unwrap_or_default()
    }

    /// Every push token registered with this agent, deleted configs' included.
    pub fn tokens_registered(&self) -> Vec<String> {
        lock(&self.inner).tokens.clone()
    }

    pub fn deletes(&self) -> Vec<String> {
        lock(&self.inner).deletes.clone()
    }

    /// How many DeleteTaskPushNotificationConfig calls have been answered so far.
    pub fn deletes_answered(&self) -> usize {
        lock(&self.inner).deletes_answered
    }

    pub fn pushes_sent(&self) -> Vec<(String, u16)> {
        lock(&self.inner).pushes_sent.clone()
    }

    /// The remote task moves on: GetTask shows it (unless `push_first`), subscribers see
    /// it, and registered configs are pushed (when the agent pushes).
    pub async fn change(&self, task: &str, state: &str, text: &str, push_first: bool) {
        if let Some(event) = self.change_state(task, state, text, push_first, Vec::new()) {
            self.push(task, &event).await;
        }
    }

    /// Asks a question with a form: the status message carries `form` as a data part
    /// beside its text.
    pub async fn ask_with_form(&self, task: &str, text: &str, form: Value) {
        let part = json!({"data": form, "mediaType": "application/json"});
        self.ask_with_part(task, text, part).await;
    }

    /// Asks a question whose status message carries `part` (an A2A part, as written)
    /// beside its text: a form, a file, a link, whatever a hostile agent makes of one.
    pub async fn ask_with_part(&self, task: &str, text: &str, part: Value) {
        let asked = "TASK_STATE_INPUT_REQUIRED";
        if let Some(event) = self.change_state(task, asked, text, false, vec![part]) {
            self.push(task, &event).await;
        }
    }

    /// The task needs the user to sign in (A2A's AUTH_REQUIRED): its status message
    /// carries the link to `GET /authorize/{task}`, where the user signs in out of band
    /// and the task moves on, and the scheme as data. Returns the link.
    pub async fn ask_for_authorization(&self, task: &str, text: &str) -> String {
        let link = format!("{}/authorize/{task}", self.url);
        let parts = vec![
            json!({"url": link, "mediaType": "text/html"}),
            json!({"data": {"scheme": "oauth2", "flow": "authorization_code",
                            "scopes": ["calendar.write"]},
                   "mediaType": "application/json"}),
        ];
        let needs = "TASK_STATE_AUTH_REQUIRED";
        if let Some(event) = self.change_state(task, needs, text, false, parts) {
            self.push(task, &event).await;
        }
        link
    }

    /// The remote task moves on, and its push is lost on the way (A2A senders do not
    /// retry): GetTask and subscribers see the change, the stand-in hears no push.
    pub fn change_and_lose_the_push(&self, task: &str, state: &str, text: &str) {
        let _ = self.change_state(task, state, text, false, Vec::new());
    }

    fn change_state(
        &self,
        task: &str,
        state: &str,
        text: &str,
        push_first: bool,
        parts: Vec<Value>,
    ) -> Option<Value> {
        {
            let mut inner = lock(&self.inner);
            let rec = inner.tasks.get_mut(task)?;
            rec.parts = parts;
            rec.state = state.to_owned();
            rec.text = text.to_owned();
            rec.changed_at = now_rfc3339();
            if !push_first {
                rec.visible_state = state.to_owned();
                rec.visible_text = text.to_owned();
            }
            inner.record(task, state, text);
        }
        let event = self.status_update(task, state, text);
        let _ = self.events.send((task.to_owned(), event.clone()));
        Some(event)
    }

    /// GetTask catches up with a change that was pushed first.
    pub fn catch_up(&self, task: &str) {
        let mut inner = lock(&self.inner);
        let Some(rec) = inner.tasks.get_mut(task) else {
            return;
        };
        rec.visible_state = rec.state.clone();
        rec.visible_text = rec.text.clone();
    }

    /// Pushes a body as it is (stale, duplicate or forged states), with the stored token.
    pub async fn push(&self, task: &str, body: &Value) {
        if !lock(&self.inner).behaviour.push_capable {
            return;
        }
        let configs = self.configs(task);
        for config in configs {
            let status = self
                .http
                .post(&config.url)
                .header("x-a2a-notification-token", &config.token)
                .header("content-type", "application/json")
                .body(body.to_string())
                .timeout(Duration::from_secs(10))
                .send()
                .await
                .map(|r| r.status().as_u16())
                .unwrap_or(0);
            lock(&self.inner)
                .pushes_sent
                .push((config.url.clone(), status));
        }
    }

    pub fn status_update(&self, task: &str, state: &str, text: &str) -> Value {
        let (context, parts) = lock(&self.inner)
            .tasks
            .get(task)
            .map(|t| (t.context_id.clone(), t.parts.clone()))
            .unwrap_or_default();
        let status = with_parts(status(state, text, task, &context, &now_rfc3339()), &parts);
        json!({"statusUpdate": {"taskId": task, "contextId": context, "status": status}})
    }

    fn snapshot(&self, task: &str, visible: bool) -> Option<Value> {
        let inner = lock(&self.inner);
        let t = inner.tasks.get(task)?;
        let (state, text) = if visible {
            (&t.visible_state, &t.visible_text)
        } else {
            (&t.state, &t.text)
        };
        let status = status(state, text, &t.id, &t.context_id, &t.changed_at);
        let parts = if !visible || t.visible_state == t.state {
            t.parts.as_slice()
        } else {
            &[]
        };
        let mut task =
            json!({"id": t.id, "contextId": t.context_id, "status": with_parts(status, parts)});
        if !t.artifacts.is_empty() {
            task["artifacts"] = Value::Array(t.artifacts.clone());
        }
        Some(task)
    }
}

/// What a parent process the tests ran said: the one JSON object it printed, once it
/// ended well (a failure names its status, what it printed and what it complained of).
pub fn parent_said(run: &std::process::Output) -> serde_json::Value {
    let said = String::from_utf8_lossy(&run.stdout);
    let complained = String::from_utf8_lossy(&run.stderr);
    if !run.status.success() {
        panic!("{}: {said}\n{complained}", run.status);
    }
    serde_json::from_str(said.trim())
        .unwrap_or_else(|e| panic!("not one JSON object ({e}): {said}\n{complained}"))
}

//! A scriptable agent behind the port, for unit tests of the stand-in's rules. Its call
//! log names each call by the protocol method it stands for.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use futures_util::StreamExt;

use crate::error::RemoteError;
use crate::model::{PushRequest, Sent, Status, Turn, Update, UpdateStream};
use crate::port::Agent;

/// One scripted stream: refused up front, or these items then the end.
pub type StreamScript = Result<Vec<Result<Update, RemoteError>>, RemoteError>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[derive(Default)]
pub struct FakeAgent {
    pub push: bool,
    pub streaming: bool,
    tasks: Mutex<HashMap<String, Status>>,
    get_failures: Mutex<Vec<RemoteError>>,
    create_result: Mutex<Option<RemoteError>>,
    delete_failures: Mutex<u32>,
    streams: Mutex<Vec<StreamScript>>,
    calls: Mutex<Vec<String>>,
    configs: Mutex<Vec<PushRequest>>,
    slowness: Mutex<Option<std::time::Duration>>,
    /// Scripted streams stay open after their last item, as a live agent's do.
    open_ended: Mutex<bool>,
    sends: Mutex<Vec<Result<Sent, RemoteError>>>,
    turns: Mutex<Vec<Turn>>,
}

impl FakeAgent {
    pub fn new(push: bool) -> Self {
        Self {
            push,
            streaming: true,
            ..Self::default()
        }
    }

    /// Where a task stands, for `get` and `cancel` to answer.
    pub fn set_task(&self, task: Status) {
        lock(&self.tasks).insert(task.task_id.clone(), task);
    }

    /// The next `get` calls fail with these, in order.
    pub fn fail_gets(&self, errors: Vec<RemoteError>) {
        *lock(&self.get_failures) = errors;
    }

    pub fn refuse_push_registration(&self, error: RemoteError) {
        *lock(&self.create_result) = Some(error);
    }

    pub fn fail_deletes(&self, times: u32) {
        *lock(&self.delete_failures) = times;
    }

    /// Each `send` (the turn of an agent that cannot stream) takes the next answer.
    pub fn script_send(&self, answer: Result<Sent, RemoteError>) {
        lock(&self.sends).push(answer);
    }

    /// `subscribe` and `get` answer only after this long (a slow agent).
    pub fn answer_slowly(&self, delay: std::time::Duration) {
        *lock(&self.slowness) = Some(delay);
    }

    async fn dawdle(&self) {
        let delay = *lock(&self.slowness);
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
    }

    /// Scripted streams stay open after their last item instead of ending.
    pub fn keep_streams_open(&self) {
        *lock(&self.open_ended) = true;
    }

    /// Each `subscribe` / `send_streaming` takes the next script.
    pub fn script_stream(&self, script: StreamScript) {
        lock(&self.streams).push(script);
    }

    /// Calls made, as `Method:arg`.
    pub fn calls(&self) -> Vec<String> {
        lock(&self.calls).clone()
    }

    pub fn count(&self, method: &str) -> usize {
        lock(&self.calls)
            .iter()
            .filter(|c| c.split(':').next() == Some(method))
            .count()
    }

    /// The message id of each turn sent, in order.
    pub fn message_ids(&self) -> Vec<String> {
        lock(&self.turns)
            .iter()
            .map(|turn| turn.message_id.clone())
            .collect()
    }

    /// Every turn sent, in order.
    pub fn turns(&self) -> Vec<Turn> {
        lock(&self.turns).clone()
    }

    /// The push registrations the agent took.
    pub fn configs(&self) -> Vec<PushRequest> {
        lock(&self.configs).clone()
    }

    fn log(&self, call: String) {
        lock(&self.calls).push(call);
    }

    fn next_stream(&self) -> Result<UpdateStream, RemoteError> {
        let mut streams = lock(&self.streams);
        if streams.is_empty() {
            // Nothing scripted: a subscription that stays open with nothing to say, as a
            // quiet task's does.
            return Ok(futures_util::stream::pending().boxed());
        }
        let items = streams.remove(0)?;
        let stream = futures_util::stream::iter(items);
        if *lock(&self.open_ended) {
            return Ok(stream.chain(futures_util::stream::pending()).boxed());
        }
        Ok(stream.boxed())
    }
}

impl Agent for FakeAgent {
    fn can_push(&self) -> bool {
        self.push
    }

    fn can_stream(&self) -> bool {
        self.streaming
    }

    async fn send_streaming(&self, turn: &Turn) -> Result<UpdateStream, RemoteError> {
        self.log(format!("SendStreamingMessage:{}", turn.text));
        lock(&self.turns).push(turn.clone());
        self.next_stream()
    }

    async fn send(&self, turn: &Turn) -> Result<Sent, RemoteError> {
        self.log(format!("SendMessage:{}", turn.text));
        lock(&self.turns).push(turn.clone());
        let mut sends = lock(&self.sends);
        if sends.is_empty() {
            return Err(RemoteError::Transport(
                "no SendMessage answer scripted".into(),
            ));
        }
        sends.remove(0)
    }

    async fn get(&self, id: &str) -> Result<Status, RemoteError> {
        self.log(format!("GetTask:{id}"));
        self.dawdle().await;
        {
            let mut failures = lock(&self.get_failures);
            if !failures.is_empty() {
                return Err(failures.remove(0));
            }
        }
        lock(&self.tasks)
            .get(id)
            .cloned()
            .ok_or_else(|| RemoteError::TaskNotFound(id.to_owned()))
    }

    async fn subscribe(&self, id: &str) -> Result<UpdateStream, RemoteError> {
        self.log(format!("SubscribeToTask:{id}"));
        self.dawdle().await;
        self.next_stream()
    }

    async fn register_push(&self, push: &PushRequest) -> Result<Option<String>, RemoteError> {
        self.log(format!(
            "CreateTaskPushNotificationConfig:{}",
            push.remote_task_id
        ));
        if let Some(err) = lock(&self.create_result).clone() {
            return Err(err);
        }
        if !self.push {
            return Err(RemoteError::PushNotSupported("no push".into()));
        }
        lock(&self.configs).push(push.clone());
        Ok(Some(push.config_id.clone()))
    }

    async fn delete_push(&self, task_id: &str, config_id: &str) -> Result<(), RemoteError> {
        self.log(format!(
            "DeleteTaskPushNotificationConfig:{task_id}/{config_id}"
        ));
        let mut failures = lock(&self.delete_failures);
        if *failures > 0 {
            *failures -= 1;
            return Err(RemoteError::Transport("delete failed".into()));
        }
        Ok(())
    }

    async fn cancel(&self, id: &str) -> Result<Status, RemoteError> {
        self.log(format!("CancelTask:{id}"));
        lock(&self.tasks)
            .get(id)
            .cloned()
            .ok_or_else(|| RemoteError::TaskNotFound(id.to_owned()))
    }
}

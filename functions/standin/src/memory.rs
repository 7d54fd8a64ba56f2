//! In-memory implementations of the ports, for unit tests of the domain. Each store
//! method takes the lock once, so each is atomic like the DynamoDB UpdateItem it stands for.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use futures_util::StreamExt;

use crate::a2a::{
    A2aError, EventStream, Message, SendMessageResult, StreamResponse, Task,
    TaskPushNotificationConfig,
};
use crate::domain::remote::RemoteOut;
use crate::domain::row::{Guard, MAX_QUEUED_REPLIES, Row, Taken, WakeEvent, Watch};
use crate::ports::{
    AgentPort, Applied, CallbackError, Closed, Doorbell, DoorbellError, Drained, ExecutionError,
    Executions, NoteBus, ParentCallback, ParentNote, ParentQueue, QueueError, RowStore, StoreError,
};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock has already failed; go on with the data.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[derive(Default)]
pub struct MemoryStore {
    rows: Mutex<HashMap<String, Row>>,
    /// The outbox: every note written with the row change that caused it.
    notes: Mutex<Vec<ParentNote>>,
    /// Every successful write, for "nothing written" assertions.
    writes: Mutex<usize>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn writes(&self) -> usize {
        *lock(&self.writes)
    }

    pub fn snapshot(&self, task_id: &str) -> Option<Row> {
        lock(&self.rows).get(task_id).cloned()
    }

    /// Every note in the outbox, in the order written.
    pub fn outbox(&self) -> Vec<ParentNote> {
        lock(&self.notes).clone()
    }

    /// The note for `out` under the row's next number, written with the row change.
    fn write_note(&self, row: &mut Row, out: &RemoteOut) -> u64 {
        row.seq += 1;
        row.last = Some(out.clone());
        lock(&self.notes).push(crate::ports::note_of(row, out, row.seq));
        row.seq
    }

    fn update<T>(
        &self,
        task_id: &str,
        guard: &Guard,
        change: impl FnOnce(&mut Row) -> T,
    ) -> Result<T, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        if !guard.admits(row) {
            return Err(StoreError::Refused(task_id.to_owned()));
        }
        let out = change(row);
        *lock(&self.writes) += 1;
        Ok(out)
    }
}

impl RowStore for MemoryStore {
    async fn create(&self, row: &Row) -> Result<Row, StoreError> {
        let mut rows = lock(&self.rows);
        if rows.contains_key(&row.task_id) {
            return Err(StoreError::AlreadyExists(row.task_id.clone()));
        }
        rows.insert(row.task_id.clone(), row.clone());
        *lock(&self.writes) += 1;
        Ok(row.clone())
    }

    async fn get(&self, task_id: &str) -> Result<Option<Row>, StoreError> {
        Ok(self.snapshot(task_id))
    }

    async fn list(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<Row>, Option<String>), StoreError> {
        let rows = lock(&self.rows);
        let mut ids: Vec<&String> = rows
            .keys()
            .filter(|id| after.is_none_or(|a| id.as_str() > a))
            .collect();
        ids.sort();
        let page: Vec<Row> = ids
            .iter()
            .take(limit as usize)
            .filter_map(|id| rows.get(*id).cloned())
            .collect();
        let next = (ids.len() > page.len())
            .then(|| page.last().map(|r| r.task_id.clone()))
            .flatten();
        Ok((page, next))
    }

    async fn record(
        &self,
        task_id: &str,
        event: &WakeEvent,
        guard: &Guard,
    ) -> Result<Row, StoreError> {
        // Only a reply needs the row before the write (already taken? queue full?).
        if matches!(event, WakeEvent::Reply { .. })
            && let Some(row) = self.snapshot(task_id)
            && guard.admits(&row)
        {
            if row.has_reply(event) {
                return Ok(row);
            }
            if row.pending.replies.len() >= MAX_QUEUED_REPLIES {
                return Err(StoreError::RepliesFull(task_id.to_owned()));
            }
        }
        self.update(task_id, guard, |row| {
            row.pending.record(event);
            if let WakeEvent::Reply { id: Some(id), .. } = event {
                row.reply_ids.push(id.clone());
            }
            row.clone()
        })
    }

    async fn park(&self, task_id: &str, park: u64, token: &str) -> Result<Row, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        if !row.admits_park(park) {
            return Err(StoreError::Refused(task_id.to_owned()));
        }
        row.park_token = Some(token.to_owned());
        row.epoch = park;
        *lock(&self.writes) += 1;
        Ok(row.clone())
    }

    async fn wake(&self, task_id: &str, park: u64) -> Result<Row, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        row.woken = row.woken.max(park);
        *lock(&self.writes) += 1;
        Ok(row.clone())
    }

    async fn drain(&self, task_id: &str, park: u64) -> Result<Drained, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        row.woken = row.woken.max(park);
        *lock(&self.writes) += 1;
        if let Some(taken) = row.taken.as_ref().filter(|t| t.park == park) {
            return Ok(Drained {
                event: taken.event.clone(),
                row: row.clone(),
            });
        }
        let event = row.pending.take_next();
        if event.is_some() {
            row.taken = Some(Taken {
                park,
                event: event.clone(),
            });
        }
        Ok(Drained {
            event,
            row: row.clone(),
        })
    }

    async fn apply(
        &self,
        task_id: &str,
        out: &RemoteOut,
        guard: &Guard,
    ) -> Result<Applied, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        if !guard.admits(row) {
            return Err(StoreError::Refused(task_id.to_owned()));
        }
        if row
            .last
            .as_ref()
            .is_some_and(|last| !out.differs_from(last))
        {
            return Ok(Applied::Unchanged);
        }
        let seq = self.write_note(row, out);
        if out.is_final {
            row.closed = true;
        }
        *lock(&self.writes) += 1;
        Ok(Applied::Changed {
            seq,
            row: Box::new(row.clone()),
        })
    }

    async fn set_remote(
        &self,
        task_id: &str,
        remote_task_id: &str,
        context_id: Option<&str>,
    ) -> Result<Row, StoreError> {
        self.update(task_id, &Guard::Open, |row| {
            row.remote_task_id = Some(remote_task_id.to_owned());
            if let Some(ctx) = context_id {
                row.context_id = Some(ctx.to_owned());
            }
            row.clone()
        })
    }

    async fn set_watch(&self, task_id: &str, watch: &Watch) -> Result<Row, StoreError> {
        self.update(task_id, &Guard::Open, |row| {
            row.watch = Some(watch.clone());
            row.clone()
        })
    }

    async fn close(
        &self,
        task_id: &str,
        final_note: Option<&RemoteOut>,
    ) -> Result<Closed, StoreError> {
        let mut rows = lock(&self.rows);
        let row = rows
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        let told = row.last.as_ref().is_some_and(|l| l.is_final);
        if told || (row.closed && final_note.is_none()) {
            return Ok(Closed {
                row: row.clone(),
                seq: None,
            });
        }
        row.closed = true;
        row.park_token = None;
        row.pending = Default::default();
        let seq = final_note.map(|out| self.write_note(row, out));
        *lock(&self.writes) += 1;
        Ok(Closed {
            row: row.clone(),
            seq,
        })
    }

    async fn notes(
        &self,
        task_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<ParentNote>, StoreError> {
        Ok(lock(&self.notes)
            .iter()
            .filter(|n| n.task_id == task_id && n.seq > after)
            .take(limit as usize)
            .cloned()
            .collect())
    }
}

/// Records every ring and heartbeat; can be told the park is over or the service is down.
#[derive(Default)]
pub struct MemoryDoorbell {
    rings: Mutex<Vec<String>>,
    heartbeats: Mutex<Vec<String>>,
    failure: Mutex<Option<DoorbellError>>,
}

impl MemoryDoorbell {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn rings(&self) -> Vec<String> {
        lock(&self.rings).clone()
    }

    pub fn heartbeats(&self) -> Vec<String> {
        lock(&self.heartbeats).clone()
    }

    pub fn fail_with(&self, error: Option<DoorbellError>) {
        *lock(&self.failure) = error;
    }
}

impl Doorbell for MemoryDoorbell {
    async fn ring(&self, park_token: &str) -> Result<(), DoorbellError> {
        lock(&self.rings).push(park_token.to_owned());
        lock(&self.failure).clone().map_or(Ok(()), Err)
    }

    async fn heartbeat(&self, park_token: &str) -> Result<(), DoorbellError> {
        lock(&self.heartbeats).push(park_token.to_owned());
        lock(&self.failure).clone().map_or(Ok(()), Err)
    }
}

#[derive(Default)]
pub struct MemoryQueue {
    notes: Mutex<Vec<ParentNote>>,
    refusals: Mutex<u32>,
}

impl MemoryQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next `times` sends fail, as an unavailable queue's would.
    pub fn refuse(&self, times: u32) {
        *lock(&self.refusals) = times;
    }

    pub fn notes(&self) -> Vec<ParentNote> {
        lock(&self.notes).clone()
    }
}

impl ParentQueue for MemoryQueue {
    async fn send(&self, note: &ParentNote) -> Result<(), QueueError> {
        {
            let mut refusals = lock(&self.refusals);
            if *refusals > 0 {
                *refusals -= 1;
                return Err(QueueError("refused on purpose".into()));
            }
        }
        let mut notes = lock(&self.notes);
        // FIFO deduplication: the same (task, seq) is delivered once.
        if !notes
            .iter()
            .any(|n| n.task_id == note.task_id && n.seq == note.seq)
        {
            notes.push(note.clone());
        }
        Ok(())
    }
}

/// An event bus that keeps what it was given, and refuses on request.
#[derive(Default)]
pub struct MemoryBus {
    events: Mutex<Vec<ParentNote>>,
    refusals: Mutex<u32>,
}

impl MemoryBus {
    /// The next `times` puts fail, as an unavailable bus's would.
    pub fn refuse(&self, times: u32) {
        *lock(&self.refusals) = times;
    }

    /// Every note put, repeats included (a bus does not deduplicate).
    pub fn events(&self) -> Vec<ParentNote> {
        lock(&self.events).clone()
    }
}

impl NoteBus for MemoryBus {
    async fn put_each(&self, notes: &[&ParentNote]) -> Vec<Result<(), QueueError>> {
        notes
            .iter()
            .map(|note| {
                let mut refusals = lock(&self.refusals);
                if *refusals > 0 {
                    *refusals -= 1;
                    return Err(QueueError("bus refused on purpose".into()));
                }
                lock(&self.events).push((*note).clone());
                Ok(())
            })
            .collect()
    }
}

/// What a Step Functions parent was told: `Ok(output)` or `Err((error, cause))`.
pub type ParentAnswer = Result<String, (String, String)>;

/// Step Functions' task-token callbacks, kept by token, with scripted failures.
#[derive(Default)]
pub struct MemoryCallback {
    answers: Mutex<Vec<(String, ParentAnswer)>>,
    failures: Mutex<Vec<CallbackError>>,
}

impl MemoryCallback {
    /// The next calls fail with these errors, in order.
    pub fn fail_with(&self, errors: Vec<CallbackError>) {
        *lock(&self.failures) = errors;
    }

    /// Every answer given, by token, in order.
    pub fn answers(&self) -> Vec<(String, ParentAnswer)> {
        lock(&self.answers).clone()
    }

    fn answer(&self, token: &str, answer: ParentAnswer) -> Result<(), CallbackError> {
        let mut failures = lock(&self.failures);
        if !failures.is_empty() {
            return Err(failures.remove(0));
        }
        lock(&self.answers).push((token.to_owned(), answer));
        Ok(())
    }
}

impl ParentCallback for MemoryCallback {
    async fn succeed(&self, token: &str, output: &str) -> Result<(), CallbackError> {
        self.answer(token, Ok(output.to_owned()))
    }

    async fn fail(&self, token: &str, error: &str, cause: &str) -> Result<(), CallbackError> {
        self.answer(token, Err((error.to_owned(), cause.to_owned())))
    }
}

/// One scripted stream: refused up front, or these items then the end.
pub type StreamScript = Result<Vec<Result<StreamResponse, A2aError>>, A2aError>;

/// A scriptable remote agent behind `AgentPort`.
#[derive(Default)]
pub struct FakeAgent {
    pub push: bool,
    pub streaming: bool,
    tasks: Mutex<HashMap<String, Task>>,
    get_failures: Mutex<Vec<A2aError>>,
    create_result: Mutex<Option<A2aError>>,
    delete_failures: Mutex<u32>,
    streams: Mutex<Vec<StreamScript>>,
    calls: Mutex<Vec<String>>,
    configs: Mutex<Vec<TaskPushNotificationConfig>>,
    slowness: Mutex<Option<std::time::Duration>>,
    sends: Mutex<Vec<Result<SendMessageResult, A2aError>>>,
}

impl FakeAgent {
    pub fn new(push: bool) -> Self {
        Self {
            push,
            streaming: true,
            ..Self::default()
        }
    }

    pub fn set_task(&self, task: Task) {
        lock(&self.tasks).insert(task.id.clone(), task);
    }

    /// The next GetTask calls fail with these, in order.
    pub fn fail_gets(&self, errors: Vec<A2aError>) {
        *lock(&self.get_failures) = errors;
    }

    pub fn refuse_push_registration(&self, error: A2aError) {
        *lock(&self.create_result) = Some(error);
    }

    pub fn fail_deletes(&self, times: u32) {
        *lock(&self.delete_failures) = times;
    }

    /// Each SendMessage (the turn of an agent that cannot stream) takes the next answer.
    pub fn script_send(&self, answer: Result<SendMessageResult, A2aError>) {
        lock(&self.sends).push(answer);
    }

    /// SubscribeToTask and GetTask answer only after this long (a slow agent).
    pub fn answer_slowly(&self, delay: std::time::Duration) {
        *lock(&self.slowness) = Some(delay);
    }

    async fn dawdle(&self) {
        let delay = *lock(&self.slowness);
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
    }

    /// Each SubscribeToTask / SendStreamingMessage takes the next script.
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

    pub fn configs(&self) -> Vec<TaskPushNotificationConfig> {
        lock(&self.configs).clone()
    }

    fn log(&self, call: String) {
        lock(&self.calls).push(call);
    }

    fn next_stream(&self) -> Result<EventStream, A2aError> {
        let mut streams = lock(&self.streams);
        if streams.is_empty() {
            return Err(A2aError::Transport("no stream scripted".into()));
        }
        let items = streams.remove(0)?;
        Ok(futures_util::stream::iter(items).boxed())
    }
}

impl AgentPort for FakeAgent {
    fn push_supported(&self) -> bool {
        self.push
    }

    fn streaming_supported(&self) -> bool {
        self.streaming
    }

    async fn send_streaming_message(&self, message: &Message) -> Result<EventStream, A2aError> {
        self.log(format!("SendStreamingMessage:{}", message.text()));
        self.next_stream()
    }

    async fn send_message(&self, message: &Message) -> Result<SendMessageResult, A2aError> {
        self.log(format!("SendMessage:{}", message.text()));
        let mut sends = lock(&self.sends);
        if sends.is_empty() {
            return Err(A2aError::Transport("no SendMessage answer scripted".into()));
        }
        sends.remove(0)
    }

    async fn get_task(&self, id: &str) -> Result<Task, A2aError> {
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
            .ok_or_else(|| A2aError::TaskNotFound(id.to_owned()))
    }

    async fn subscribe_to_task(&self, id: &str) -> Result<EventStream, A2aError> {
        self.log(format!("SubscribeToTask:{id}"));
        self.dawdle().await;
        self.next_stream()
    }

    async fn create_push_config(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.log(format!(
            "CreateTaskPushNotificationConfig:{}",
            config.task_id
        ));
        if let Some(err) = lock(&self.create_result).clone() {
            return Err(err);
        }
        if !self.push {
            return Err(A2aError::PushNotSupported("no push".into()));
        }
        lock(&self.configs).push(config.clone());
        Ok(config.clone())
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<(), A2aError> {
        self.log(format!(
            "DeleteTaskPushNotificationConfig:{task_id}/{config_id}"
        ));
        let mut failures = lock(&self.delete_failures);
        if *failures > 0 {
            *failures -= 1;
            return Err(A2aError::Transport("delete failed".into()));
        }
        Ok(())
    }

    async fn cancel_task(&self, id: &str) -> Result<Task, A2aError> {
        self.log(format!("CancelTask:{id}"));
        lock(&self.tasks)
            .get(id)
            .cloned()
            .ok_or_else(|| A2aError::TaskNotFound(id.to_owned()))
    }
}

/// Executions in memory: the ones started through the port and the ones a test adds;
/// status calls can be made to fail.
#[derive(Default)]
pub struct MemoryExecutions {
    /// name → (input, status)
    executions: Mutex<BTreeMap<String, (String, String)>>,
    started: Mutex<usize>,
    start_failure: Mutex<Option<ExecutionError>>,
    status_failure: Mutex<Option<ExecutionError>>,
}

impl MemoryExecutions {
    pub fn new() -> Self {
        Self::default()
    }

    /// An execution that exists already, as an earlier stand-in left it.
    pub fn add(&self, name: &str, status: &str) {
        lock(&self.executions).insert(name.to_owned(), (String::new(), status.to_owned()));
    }

    /// Every start fails with `error` (None: they start again).
    pub fn fail_start(&self, error: Option<ExecutionError>) {
        *lock(&self.start_failure) = error;
    }

    /// Every status call fails with `error` (None: they answer again).
    pub fn fail_status(&self, error: Option<ExecutionError>) {
        *lock(&self.status_failure) = error;
    }

    /// How many executions the port started.
    pub fn started(&self) -> usize {
        *lock(&self.started)
    }

    pub fn arn_of(&self, name: &str) -> String {
        self.arn(name)
    }

    pub fn input_of(&self, name: &str) -> Option<String> {
        lock(&self.executions)
            .get(name)
            .map(|(input, _)| input.clone())
    }
}

impl Executions for MemoryExecutions {
    fn arn(&self, name: &str) -> String {
        format!("arn:aws:states:us-east-1:000000000000:execution:memory:{name}")
    }

    async fn start(&self, name: &str, input: &str) -> Result<String, ExecutionError> {
        if let Some(error) = lock(&self.start_failure).clone() {
            return Err(error);
        }
        let mut executions = lock(&self.executions);
        match executions.get(name) {
            Some((given, status)) if given == input && status == "RUNNING" => Ok(self.arn(name)),
            Some(_) => Err(ExecutionError::AlreadyExists(name.to_owned())),
            None => {
                executions.insert(name.to_owned(), (input.to_owned(), "RUNNING".to_owned()));
                *lock(&self.started) += 1;
                Ok(self.arn(name))
            }
        }
    }

    async fn status(&self, arn: &str) -> Result<String, ExecutionError> {
        if let Some(error) = lock(&self.status_failure).clone() {
            return Err(error);
        }
        let name = arn.rsplit(':').next().unwrap_or_default();
        lock(&self.executions)
            .get(name)
            .map(|(_, status)| status.clone())
            .ok_or_else(|| ExecutionError::DoesNotExist(arn.to_owned()))
    }
}

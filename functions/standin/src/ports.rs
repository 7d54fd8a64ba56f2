//! The ports the domain talks through. Adapters implement them for DynamoDB, Step
//! Functions, SQS and HTTP; `memory` implements them in memory for tests.

use std::future::Future;

use crate::a2a::{
    A2aError, EventStream, Message, SendMessageResult, Task, TaskPushNotificationConfig,
};
use crate::domain::remote::RemoteOut;
use crate::domain::row::{Guard, Row, WakeEvent, Watch};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("no stand-in {0}")]
    NotFound(String),
    #[error("stand-in {0} already exists")]
    AlreadyExists(String),
    /// The write's guard failed: closed, another watch, another epoch, another digest.
    #[error("stand-in {0} refused the write (closed or superseded)")]
    Refused(String),
    #[error("row store unavailable: {0}")]
    Backend(String),
    /// As many replies as a row holds already wait for the stand-in to take them.
    #[error("stand-in {0} has {max} replies waiting already", max = crate::domain::row::MAX_QUEUED_REPLIES)]
    RepliesFull(String),
}

/// What `apply` did with a remote state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The row moved and the parent's note is in the outbox under `seq`, written in the
    /// same transaction; `row` is the row after the write (a final state closed it).
    Changed { seq: u64, row: Box<Row> },
    /// Same (state, text) as the row already had.
    Unchanged,
}

/// What a drain took, and the row as it was left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drained {
    pub event: Option<WakeEvent>,
    pub row: Row,
}

/// What a close did: the row as closed, and the number of the final note it wrote (None
/// when the row was already closed: a final state, or an earlier run of the same end,
/// told the parent already).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    pub row: Row,
    pub seq: Option<u64>,
}

/// Every write is atomic and conditional (one DynamoDB UpdateItem, or one transaction with
/// the note it records; the drain is two such writes) and returns the item after it.
pub trait RowStore: Send + Sync {
    /// Creates the row; `AlreadyExists` when a row with that id is there.
    fn create(&self, row: &Row) -> impl Future<Output = Result<Row, StoreError>> + Send;
    fn get(&self, task_id: &str) -> impl Future<Output = Result<Option<Row>, StoreError>> + Send;
    /// One page of rows in the store's own order, starting after `after` (a task id);
    /// returns the page and where the next one starts (None: that was the last).
    fn list(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<(Vec<Row>, Option<String>), StoreError>> + Send;
    /// Records a wake event under its guard (never on a closed row).
    fn record(
        &self,
        task_id: &str,
        event: &WakeEvent,
        guard: &Guard,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    /// Stores the token of park number `park` and makes it the epoch, only if that park
    /// is newer than every park stored or woken (`Row::admits_park`); `Refused` otherwise
    /// (a late or repeated invoke of an old park), and on a closed row.
    fn park(
        &self,
        task_id: &str,
        park: u64,
        token: &str,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    /// Ends park `park` (marks it woken, which closes the watchers' fence) without taking
    /// an event: the roll leaves every pending event for its successor.
    fn wake(
        &self,
        task_id: &str,
        park: u64,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    /// Ends park `park` and takes the next pending event by priority. Idempotent per park:
    /// a retried drain of the same park returns the event the first one took.
    fn drain(
        &self,
        task_id: &str,
        park: u64,
    ) -> impl Future<Output = Result<Drained, StoreError>> + Send;
    /// If (state, text) differs from `last`: moves `last` to `out`, takes the next note
    /// number and writes the parent's note to the outbox, all in one transaction; a final
    /// state also closes the row in it. Refused when the guard fails.
    fn apply(
        &self,
        task_id: &str,
        out: &RemoteOut,
        guard: &Guard,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;
    /// Records the remote task (after the first turn) and its context.
    fn set_remote(
        &self,
        task_id: &str,
        remote_task_id: &str,
        context_id: Option<&str>,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    fn set_watch(
        &self,
        task_id: &str,
        watch: &Watch,
    ) -> impl Future<Output = Result<Row, StoreError>> + Send;
    /// Closes the row (drops the park token and pending events) and, with `final_note`,
    /// makes it `last` and writes its note under the next number in the same transaction
    /// (also on a row closed earlier without one). Once a final state is `last` it changes
    /// nothing (`Closed::seq` is None): the parent is told once.
    fn close(
        &self,
        task_id: &str,
        final_note: Option<&RemoteOut>,
    ) -> impl Future<Output = Result<Closed, StoreError>> + Send;
    /// The stand-in's notes with a number above `after`, in order, at most `limit`.
    fn notes(
        &self,
        task_id: &str,
        after: u64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ParentNote>, StoreError>> + Send;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DoorbellError {
    /// The park is over (AWS: TaskTimedOut / InvalidToken). Harmless by design.
    #[error("the park is already over")]
    ParkOver,
    #[error("doorbell unavailable: {0}")]
    Backend(String),
}

/// Ends a park (Step Functions SendTaskSuccess / SendTaskHeartbeat on the park token).
pub trait Doorbell: Send + Sync {
    fn ring(&self, park_token: &str) -> impl Future<Output = Result<(), DoorbellError>> + Send;
    fn heartbeat(&self, park_token: &str)
    -> impl Future<Output = Result<(), DoorbellError>> + Send;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecutionError {
    #[error("execution {0} already exists")]
    AlreadyExists(String),
    #[error("execution {0} does not exist")]
    DoesNotExist(String),
    #[error("Step Functions unavailable: {0}")]
    Backend(String),
}

/// The stand-ins' executions (Step Functions StartExecution and DescribeExecution), as
/// the control API starts and reads them.
pub trait Executions: Send + Sync {
    /// The ARN an execution of this name has, whether or not it exists.
    fn arn(&self, name: &str) -> String;
    /// Starts execution `name` with `input`; its ARN. Starting a running execution again
    /// with the same input answers it again; any other reuse of a name is `AlreadyExists`.
    fn start(
        &self,
        name: &str,
        input: &str,
    ) -> impl Future<Output = Result<String, ExecutionError>> + Send;
    /// The execution's status: `RUNNING`, `SUCCEEDED`, `FAILED`, `TIMED_OUT`, `ABORTED`.
    fn status(&self, arn: &str) -> impl Future<Output = Result<String, ExecutionError>> + Send;
}

pub use standin_wire::ParentNote;

/// The note that tells the parent the row moved to `out`, under number `seq`.
pub fn note_of(row: &Row, out: &RemoteOut, seq: u64) -> ParentNote {
    ParentNote {
        task_id: row.task_id.clone(),
        remote_task_id: Some(out.remote_task_id.clone()).filter(|id| !id.is_empty()),
        agent: row.agent.clone(),
        state: out.state,
        text: out.text.clone(),
        is_final: out.is_final,
        seq,
        at: crate::clock::now_rfc3339(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parent queue unavailable: {0}")]
pub struct QueueError(pub String);

/// Where the outbox delivers notes (the notify function is its only caller).
pub trait ParentQueue: Send + Sync {
    fn send(&self, note: &ParentNote) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// Sends one note each of distinct stand-ins (so no order among them); one answer
    /// per note, in the same order. A queue that can carry many in one call does.
    fn send_each(
        &self,
        notes: &[&ParentNote],
    ) -> impl Future<Output = Vec<Result<(), QueueError>>> + Send {
        async move {
            let mut answers = Vec::with_capacity(notes.len());
            for note in notes {
                answers.push(self.send(note).await);
            }
            answers
        }
    }
}

/// An event bus every note is also put on, for parents that route notes with rules.
pub trait NoteBus: Send + Sync {
    /// One answer per note, in the same order.
    fn put_each(
        &self,
        notes: &[&ParentNote],
    ) -> impl Future<Output = Vec<Result<(), QueueError>>> + Send;
}

/// Why a Step Functions parent could not be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// The parent's task is over (timed out, its execution stopped) or the token is not
    /// one: nobody waits for the answer, so it is not tried again.
    #[error("the parent's task no longer waits: {0}")]
    Gone(String),
    #[error("Step Functions unavailable: {0}")]
    Unavailable(String),
}

/// A Step Functions parent waiting on its task token for the stand-in's end.
pub trait ParentCallback: Send + Sync {
    fn succeed(
        &self,
        token: &str,
        output: &str,
    ) -> impl Future<Output = Result<(), CallbackError>> + Send;
    fn fail(
        &self,
        token: &str,
        error: &str,
        cause: &str,
    ) -> impl Future<Output = Result<(), CallbackError>> + Send;
}

/// The remote agent, as the stand-in's functions use it.
pub trait AgentPort: Send + Sync {
    fn push_supported(&self) -> bool;
    fn streaming_supported(&self) -> bool;
    fn send_streaming_message(
        &self,
        message: &Message,
    ) -> impl Future<Output = Result<EventStream, A2aError>> + Send;
    /// SendMessage with `returnImmediately` (for agents whose card says they cannot
    /// stream): the task as it stands at once; the turn then asks GetTask.
    fn send_message(
        &self,
        message: &Message,
    ) -> impl Future<Output = Result<SendMessageResult, A2aError>> + Send;
    fn get_task(&self, remote_task_id: &str)
    -> impl Future<Output = Result<Task, A2aError>> + Send;
    fn subscribe_to_task(
        &self,
        remote_task_id: &str,
    ) -> impl Future<Output = Result<EventStream, A2aError>> + Send;
    fn create_push_config(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> impl Future<Output = Result<TaskPushNotificationConfig, A2aError>> + Send;
    fn delete_push_config(
        &self,
        remote_task_id: &str,
        config_id: &str,
    ) -> impl Future<Output = Result<(), A2aError>> + Send;
    fn cancel_task(
        &self,
        remote_task_id: &str,
    ) -> impl Future<Output = Result<Task, A2aError>> + Send;
}

/// A borrowed agent is an agent (the end takes its agent from a connector).
impl<T: AgentPort> AgentPort for &T {
    fn push_supported(&self) -> bool {
        (**self).push_supported()
    }
    fn streaming_supported(&self) -> bool {
        (**self).streaming_supported()
    }
    async fn send_streaming_message(&self, message: &Message) -> Result<EventStream, A2aError> {
        (**self).send_streaming_message(message).await
    }
    async fn send_message(&self, message: &Message) -> Result<SendMessageResult, A2aError> {
        (**self).send_message(message).await
    }
    async fn get_task(&self, id: &str) -> Result<Task, A2aError> {
        (**self).get_task(id).await
    }
    async fn subscribe_to_task(&self, id: &str) -> Result<EventStream, A2aError> {
        (**self).subscribe_to_task(id).await
    }
    async fn create_push_config(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        (**self).create_push_config(config).await
    }
    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<(), A2aError> {
        (**self).delete_push_config(task_id, config_id).await
    }
    async fn cancel_task(&self, id: &str) -> Result<Task, A2aError> {
        (**self).cancel_task(id).await
    }
}

impl AgentPort for crate::a2a::A2aClient {
    fn push_supported(&self) -> bool {
        self.agent().push_notifications
    }
    fn streaming_supported(&self) -> bool {
        self.agent().streaming
    }
    async fn send_streaming_message(&self, message: &Message) -> Result<EventStream, A2aError> {
        crate::a2a::A2aClient::send_streaming_message(self, message).await
    }
    async fn send_message(&self, message: &Message) -> Result<SendMessageResult, A2aError> {
        crate::a2a::A2aClient::send_message(self, message, true).await
    }
    async fn get_task(&self, id: &str) -> Result<Task, A2aError> {
        crate::a2a::A2aClient::get_task(self, id).await
    }
    async fn subscribe_to_task(&self, id: &str) -> Result<EventStream, A2aError> {
        crate::a2a::A2aClient::subscribe_to_task(self, id).await
    }
    async fn create_push_config(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        crate::a2a::A2aClient::create_push_config(self, config).await
    }
    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<(), A2aError> {
        crate::a2a::A2aClient::delete_push_config(self, task_id, config_id).await
    }
    async fn cancel_task(&self, id: &str) -> Result<Task, A2aError> {
        crate::a2a::A2aClient::cancel_task(self, id).await
    }
}

//! The remote agent as the stand-in's functions use it.

use std::future::Future;

use crate::error::RemoteError;
use crate::model::{PushRequest, Sent, Spilled, Status, Turn, UpdateStream};

pub trait Agent: Send + Sync {
    /// The agent can post the task's changes to a URL.
    fn can_push(&self) -> bool;
    /// The agent can stream a turn's and a task's updates.
    fn can_stream(&self) -> bool;
    /// Sends a turn and streams the task's updates as they come.
    fn send_streaming(
        &self,
        turn: &Turn,
    ) -> impl Future<Output = Result<UpdateStream, RemoteError>> + Send;
    /// Sends a turn and answers at once with where the task stands (for agents that
    /// cannot stream: the turn then asks `get`).
    fn send(&self, turn: &Turn) -> impl Future<Output = Result<Sent, RemoteError>> + Send;
    fn get(&self, remote_task_id: &str)
    -> impl Future<Output = Result<Status, RemoteError>> + Send;
    /// Streams the task's updates from now on.
    fn subscribe(
        &self,
        remote_task_id: &str,
    ) -> impl Future<Output = Result<UpdateStream, RemoteError>> + Send;
    /// Registers a push; the config id the agent keeps it under, when it says one.
    fn register_push(
        &self,
        push: &PushRequest,
    ) -> impl Future<Output = Result<Option<String>, RemoteError>> + Send;
    fn delete_push(
        &self,
        remote_task_id: &str,
        config_id: &str,
    ) -> impl Future<Output = Result<(), RemoteError>> + Send;
    fn cancel(
        &self,
        remote_task_id: &str,
    ) -> impl Future<Output = Result<Status, RemoteError>> + Send;
}

/// A borrowed agent is an agent (the end takes its agent from a connector).
impl<T: Agent> Agent for &T {
    fn can_push(&self) -> bool {
        (**self).can_push()
    }
    fn can_stream(&self) -> bool {
        (**self).can_stream()
    }
    async fn send_streaming(&self, turn: &Turn) -> Result<UpdateStream, RemoteError> {
        (**self).send_streaming(turn).await
    }
    async fn send(&self, turn: &Turn) -> Result<Sent, RemoteError> {
        (**self).send(turn).await
    }
    async fn get(&self, id: &str) -> Result<Status, RemoteError> {
        (**self).get(id).await
    }
    async fn subscribe(&self, id: &str) -> Result<UpdateStream, RemoteError> {
        (**self).subscribe(id).await
    }
    async fn register_push(&self, push: &PushRequest) -> Result<Option<String>, RemoteError> {
        (**self).register_push(push).await
    }
    async fn delete_push(&self, task_id: &str, config_id: &str) -> Result<(), RemoteError> {
        (**self).delete_push(task_id, config_id).await
    }
    async fn cancel(&self, id: &str) -> Result<Status, RemoteError> {
        (**self).cancel(id).await
    }
}

/// Where an artifact's large content goes as it arrives (see [`Spilled`]): the stand-in
/// stores it. A failure to store is the sink's to record; the call goes on.
pub trait ContentSink: Send + Sync {
    fn take(&self, spilled: Spilled) -> futures_util::future::BoxFuture<'_, ()>;
}

//! An agent whose answers' artifacts reach the desk: artifact updates as they stream,
//! and a whole task's list as the agent's own account. A stream that ends the task
//! without one is followed by a GetTask, the truth at the end.

use std::sync::Arc;

use futures_util::StreamExt;

use super::desk::Desk;
use standin_remote::{Agent, PushRequest, RemoteError, Sent, Status, Turn, Update, UpdateStream};

pub struct Collecting<A> {
    inner: Arc<A>,
    desk: Option<Arc<Desk>>,
}

impl<A: Agent + 'static> Collecting<A> {
    /// Without a desk (artifacts not kept) it is the agent itself.
    pub fn new(inner: A, desk: Option<Arc<Desk>>) -> Self {
        Self {
            inner: Arc::new(inner),
            desk,
        }
    }

    /// The agent itself.
    pub fn inner(&self) -> &A {
        &self.inner
    }

    fn observe(&self, status: &Status) {
        if let (Some(desk), Some(artifacts)) = (&self.desk, &status.artifacts) {
            desk.observe_task(artifacts, settled(status));
        }
    }

    fn watch(&self, stream: UpdateStream) -> UpdateStream {
        let Some(desk) = self.desk.clone() else {
            return stream;
        };
        let inner = self.inner.clone();
        stream
            .then(move |item| {
                let (inner, desk) = (inner.clone(), desk.clone());
                async move {
                    match &item {
                        Ok(Update::Artifact(update)) => desk.observe_update(update),
                        Ok(Update::Status(status)) => match &status.artifacts {
                            Some(artifacts) => desk.observe_task(artifacts, settled(status)),
                            None if status.state.is_terminal() && !status.task_id.is_empty() => {
                                match inner.get(&status.task_id).await {
                                    Ok(task) => {
                                        let whole = task.artifacts.clone().unwrap_or_default();
                                        desk.observe_task(&whole, settled(&task));
                                    }
                                    Err(err) => tracing::warn!(
                                        error = %err,
                                        "GetTask for the final artifacts failed; keeping what streamed"
                                    ),
                                }
                            }
                            None => {}
                        },
                        _ => {}
                    }
                    item
                }
            })
            .boxed()
    }
}

/// The task stands still (interrupted or ended): what it lists is whole.
fn settled(status: &Status) -> bool {
    status.state.is_terminal() || status.state.is_interrupted()
}

impl<A: Agent + 'static> Agent for Collecting<A> {
    fn can_push(&self) -> bool {
        self.inner.can_push()
    }
    fn can_stream(&self) -> bool {
        self.inner.can_stream()
    }
    async fn send_streaming(&self, turn: &Turn) -> Result<UpdateStream, RemoteError> {
        Ok(self.watch(self.inner.send_streaming(turn).await?))
    }
    async fn send(&self, turn: &Turn) -> Result<Sent, RemoteError> {
        let sent = self.inner.send(turn).await?;
        if let Sent::Task(status) = &sent {
            self.observe(status);
        }
        Ok(sent)
    }
    async fn get(&self, id: &str) -> Result<Status, RemoteError> {
        let status = self.inner.get(id).await?;
        self.observe(&status);
        Ok(status)
    }
    async fn subscribe(&self, id: &str) -> Result<UpdateStream, RemoteError> {
        Ok(self.watch(self.inner.subscribe(id).await?))
    }
    async fn register_push(&self, push: &PushRequest) -> Result<Option<String>, RemoteError> {
        self.inner.register_push(push).await
    }
    async fn delete_push(&self, task_id: &str, config_id: &str) -> Result<(), RemoteError> {
        self.inner.delete_push(task_id, config_id).await
    }
    async fn cancel(&self, id: &str) -> Result<Status, RemoteError> {
        let status = self.inner.cancel(id).await?;
        self.observe(&status);
        Ok(status)
    }
}

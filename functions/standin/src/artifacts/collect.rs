//! An agent whose answers' artifacts reach the desk: artifact updates as they stream,
//! and a whole task's list as the agent's own account. A stream that ends the task
//! without one is followed by a GetTask, the truth at the end. And no echo of ours gets
//! past it: every status (its text, its parts) and every error the agent sends has the
//! credentials this process holds and the push token blanked as it arrives, before it
//! is scrubbed, cut, compared, noted, kept on the row or put in a step's output.

use std::sync::Arc;

use futures_util::StreamExt;

use super::desk::Desk;
use super::guard::EchoGuard;
use standin_remote::{
    Agent, Content, PushRequest, RemoteError, Sent, Status, Turn, Update, UpdateStream,
};

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

    /// The agent as reaching it turned out; why it could not be reached is blanked as its
    /// own errors are, since its card and its token endpoint word what they were sent.
    pub async fn reached(
        agent: Result<A, RemoteError>,
        desk: Option<Arc<Desk>>,
    ) -> Result<Self, RemoteError> {
        match (agent, &desk) {
            (Ok(agent), _) => Ok(Self::new(agent, desk)),
            (Err(err), Some(at)) => Err(blank_error(&at.guard().await, err)),
            (Err(err), None) => Err(err),
        }
    }

    /// The agent itself.
    #[cfg(any(test, feature = "test-support"))]
    pub fn inner(&self) -> &A {
        &self.inner
    }

    fn observe(&self, status: &Status) {
        if let (Some(desk), Some(artifacts)) = (&self.desk, &status.artifacts) {
            desk.observe_task(artifacts, settled(status));
        }
    }

    /// `answer` with what must not pass blanked, as of now (nothing without a desk).
    async fn guarded<T>(
        &self,
        answer: Result<T, RemoteError>,
        blank: impl FnOnce(&EchoGuard, T) -> T,
    ) -> Result<T, RemoteError> {
        let Some(desk) = &self.desk else {
            return answer;
        };
        let guard = desk.guard().await;
        match answer {
            Ok(value) => Ok(blank(&guard, value)),
            Err(err) => Err(blank_error(&guard, err)),
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
                    let guard = desk.guard().await;
                    let item = match item {
                        Ok(Update::Status(status)) => Ok(Update::Status(blank_status(&guard, status))),
                        Ok(Update::Answer(text)) => Ok(Update::Answer(guard.blank(&text))),
                        Ok(other) => Ok(other),
                        Err(err) => Err(blank_error(&guard, err)),
                    };
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
                                        error = %blank_error(&guard, err),
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

/// `status` with every echo blanked from what a note or the row takes of it.
fn blank_status(guard: &EchoGuard, mut status: Status) -> Status {
    status.text = status.text.map(|text| guard.blank(&text));
    for part in &mut status.parts {
        for name in [&mut part.filename, &mut part.media_type]
            .into_iter()
            .flatten()
        {
            *name = guard.blank(name);
        }
        match &mut part.content {
            Content::Text(text) | Content::Url(text) => *text = guard.blank(text),
            Content::Data(json) => *json = blank_json(guard, json),
            _ => {}
        }
    }
    status
}

/// JSON text with every echo blanked from its strings (keys included), as they read
/// unescaped: a credential with a quote in it is found too.
fn blank_json(guard: &EchoGuard, json: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(mut value) => {
            guard.blank_value(&mut value);
            value.to_string()
        }
        Err(_) => guard.blank(json),
    }
}

/// An agent's error with every echo blanked from the words it chose.
fn blank_error(guard: &EchoGuard, err: RemoteError) -> RemoteError {
    use RemoteError as E;
    match err {
        E::TaskNotFound(m) => E::TaskNotFound(guard.blank(&m)),
        E::TaskNotCancelable(m) => E::TaskNotCancelable(guard.blank(&m)),
        E::PushNotSupported(m) => E::PushNotSupported(guard.blank(&m)),
        E::UnsupportedOperation(m) => E::UnsupportedOperation(guard.blank(&m)),
        E::VersionNotSupported(m) => E::VersionNotSupported(guard.blank(&m)),
        E::Rpc { code, message } => E::Rpc {
            code,
            message: guard.blank(&message),
        },
        E::Transport(m) => E::Transport(guard.blank(&m)),
        E::InvalidResponse(m) => E::InvalidResponse(guard.blank(&m)),
        E::Card(m) => E::Card(guard.blank(&m)),
        E::AuthNotConfigured(m) => E::AuthNotConfigured(guard.blank(&m)),
        E::Credentials(m) => E::Credentials(guard.blank(&m)),
        E::Grpc { code, message } => E::Grpc {
            code,
            message: guard.blank(&message),
        },
        E::Refused(m) => E::Refused(guard.blank(&m)),
        // Every arm is named, so a new error that carries the agent's words cannot slip by.
        E::Http { .. } | E::Timeout { .. } | E::TooLarge { .. } | E::Unauthorized { .. } => err,
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
        let opened = self.inner.send_streaming(turn).await;
        Ok(self.watch(self.guarded(opened, |_, stream| stream).await?))
    }
    async fn send(&self, turn: &Turn) -> Result<Sent, RemoteError> {
        let answer = self.inner.send(turn).await;
        let sent = self
            .guarded(answer, |guard, sent| match sent {
                Sent::Task(status) => Sent::Task(blank_status(guard, status)),
                Sent::Answer(text) => Sent::Answer(guard.blank(&text)),
            })
            .await?;
        if let Sent::Task(status) = &sent {
            self.observe(status);
        }
        Ok(sent)
    }
    async fn get(&self, id: &str) -> Result<Status, RemoteError> {
        let answer = self.inner.get(id).await;
        let status = self.guarded(answer, blank_status).await?;
        self.observe(&status);
        Ok(status)
    }
    async fn subscribe(&self, id: &str) -> Result<UpdateStream, RemoteError> {
        let opened = self.inner.subscribe(id).await;
        Ok(self.watch(self.guarded(opened, |_, stream| stream).await?))
    }
    async fn register_push(&self, push: &PushRequest) -> Result<Option<String>, RemoteError> {
        let answer = self.inner.register_push(push).await;
        self.guarded(answer, |_, id| id).await
    }
    async fn delete_push(&self, task_id: &str, config_id: &str) -> Result<(), RemoteError> {
        let answer = self.inner.delete_push(task_id, config_id).await;
        self.guarded(answer, |_, ()| ()).await
    }
    async fn cancel(&self, id: &str) -> Result<Status, RemoteError> {
        let answer = self.inner.cancel(id).await;
        let status = self.guarded(answer, blank_status).await?;
        self.observe(&status);
        Ok(status)
    }
}

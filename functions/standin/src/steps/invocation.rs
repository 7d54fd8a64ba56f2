//! One invocation's view of one stand-in, built once by the wiring and handed to the
//! step: the row as read on the way in, the agent's entry, the teller (which carries the
//! stand-in's artifacts to its notes), and the agent, connected only when a step first
//! asks for it (reading its card costs a round trip an end or a park may not need).

use std::future::Future;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio::sync::OnceCell;

use super::Step;
use super::next::Pacing;
use crate::agents::AgentSpec;
use crate::artifacts::Blobs;
use crate::outbox::Teller;
use crate::row::{Row, RowStore};
use standin_remote::{Agent, RemoteError};

pub struct Invocation<'a, S, A> {
    /// How this invocation tells the parent; `teller.rows()` for everything else.
    pub teller: Teller<'a, S>,
    /// The agent's entry: the one the row kept when the stand-in started, else the
    /// catalog's. None when the deployment knows no such agent.
    pub spec: Option<AgentSpec>,
    /// The row as the invocation read or wrote it on its way in, when it did.
    pub row: Option<Row>,
    /// Where the files a parent put through `POST /uploads` are (None: no bucket).
    pub uploads: Option<Arc<dyn Blobs>>,
    connect: Mutex<Option<BoxFuture<'a, Result<A, RemoteError>>>>,
    agent: OnceCell<Result<A, RemoteError>>,
}

impl<'a, S: RowStore, A: Agent + 'a> Invocation<'a, S, A> {
    /// `connect` runs when a step first asks for the agent, and only then.
    pub fn new(
        teller: Teller<'a, S>,
        connect: impl Future<Output = Result<A, RemoteError>> + Send + 'a,
    ) -> Self {
        Self {
            teller,
            spec: None,
            row: None,
            uploads: None,
            connect: Mutex::new(Some(connect.boxed())),
            agent: OnceCell::new(),
        }
    }

    /// With an agent at hand.
    #[cfg(any(test, feature = "test-support"))]
    pub fn reaching(teller: Teller<'a, S>, agent: A) -> Self {
        Self::new(teller, std::future::ready(Ok(agent)))
    }
}

impl<'a, S: RowStore, A: Agent> Invocation<'a, S, A> {
    pub fn with_spec(mut self, spec: Option<AgentSpec>) -> Self {
        self.spec = spec;
        self
    }

    pub fn with_row(mut self, row: Option<Row>) -> Self {
        self.row = row;
        self
    }

    pub fn with_uploads(mut self, uploads: Option<Arc<dyn Blobs>>) -> Self {
        self.uploads = uploads;
        self
    }

    /// The deployment's pacing with the stand-in's own: its agent's poll bound and
    /// unreachable bound, its deadline (the start's, else its agent's, within the
    /// deployment's), and now.
    pub fn pacing(&self, deployment: Pacing, step: &Step) -> Pacing {
        let most = deployment.deadline_secs;
        let spec = self.spec.as_ref();
        let asked = step
            .deadline_secs
            .or_else(|| spec.and_then(|s| s.max_duration).map(|d| d.as_secs()));
        let pacing = Pacing {
            deadline_secs: asked.map_or(most, |secs| secs.clamp(1, most)),
            now_secs: crate::clock::now_ms() / 1000,
            ..deployment
        };
        match spec {
            Some(spec) => Pacing {
                max_unreachable_secs: spec.max_unreachable.as_secs(),
                ..pacing.with_poll_max(spec.poll_max_interval)
            },
            None => pacing,
        }
    }

    pub fn rows(&self) -> &'a S {
        self.teller.rows()
    }

    /// At the invocation's end (`Teller::keep`).
    pub async fn finish(&self) {
        self.teller.keep().await;
    }

    /// The agent, connected on the first ask; every later ask has the same answer.
    pub async fn agent(&self) -> Result<&A, RemoteError> {
        let connected = self
            .agent
            .get_or_init(|| async {
                let connect = self
                    .connect
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                match connect {
                    Some(connect) => connect.await,
                    None => Err(RemoteError::Transport(
                        "the agent's connection was abandoned".into(),
                    )),
                }
            })
            .await;
        connected.as_ref().map_err(Clone::clone)
    }
}

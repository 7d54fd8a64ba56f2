//! Where a task's artifacts go when they are collected: how stored content is named,
//! and the sink it is handed to. Every binding carries it; the client sets it.

use std::sync::Arc;

use super::divert::SpillNames;
use super::skim::Skim;
use crate::model::Spilled;
use crate::port::ContentSink;

/// Artifacts collected: how stored content is named, and where it goes.
#[derive(Clone)]
pub struct Collect {
    names: SpillNames,
    sink: Arc<dyn ContentSink>,
}

impl Collect {
    pub(crate) fn new(sink: Arc<dyn ContentSink>) -> Self {
        Self {
            names: SpillNames::new(),
            sink,
        }
    }

    pub(crate) fn skim(&self, limit: usize) -> Skim {
        Skim::collecting(limit, self.names.clone())
    }

    pub(crate) fn names(&self) -> SpillNames {
        self.names.clone()
    }

    pub(crate) async fn hand_on(&self, spilled: Vec<Spilled>) {
        for each in spilled {
            self.sink.take(each).await;
        }
    }
}

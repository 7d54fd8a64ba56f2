//! The park step for push and off: store a park's token, or ring it at once.

use serde::Deserialize;
use tracing::warn;

use super::{StepError, not_ours};
use crate::doorbell::{self, Doorbell};
use crate::row::{Row, RowStore};

/// Who asks for a park: the execution, its generation and its lease, as the park
/// state's payload names them (`not_ours`). The default is unchecked (unit tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owner {
    pub execution: Option<String>,
    pub generation: u32,
    pub lease: Option<String>,
}

impl Owner {
    /// Whether the park may touch stand-in `task_id`'s row; the reason it may not.
    /// `known`: the row as the invocation read it, when it found one (a read less).
    pub async fn refused<S: RowStore>(
        &self,
        store: &S,
        task_id: &str,
        known: Option<&Row>,
    ) -> Result<Option<String>, StepError> {
        if self.execution.is_none() {
            return Ok(None);
        }
        let read = match known {
            Some(_) => None,
            None => store.get(task_id).await?,
        };
        Ok(not_ours(
            task_id,
            self.generation,
            self.execution.as_deref(),
            self.lease.as_deref(),
            known.or(read.as_ref()),
        ))
    }
}

/// The input of a `.waitForTaskToken` park: the stand-in, the park's number and token,
/// and the execution that parks (its name, generation and lease).
#[derive(Debug, Deserialize)]
pub struct ParkInput {
    pub task_id: String,
    #[serde(default)]
    pub agent: String,
    pub park: u64,
    pub token: String,
    #[serde(default)]
    pub execution: Option<String>,
    #[serde(default)]
    pub generation: u32,
    #[serde(default)]
    pub lease: Option<String>,
}

impl ParkInput {
    pub fn owner(&self) -> Owner {
        Owner {
            execution: self.execution.clone(),
            generation: self.generation,
            lease: self.lease.clone(),
        }
    }
}

/// The park step for push and off: store the token if this park is the newest; ring
/// itself if an event waits. A late or repeated invoke changes nothing, and neither does
/// a park of an execution that is not the stand-in's (it waits out its timeout, and its
/// wake refuses it).
pub async fn park<S: RowStore, D: Doorbell>(
    store: &S,
    bell: &D,
    task_id: &str,
    park: u64,
    token: &str,
    owner: &Owner,
) -> Result<bool, StepError> {
    if let Some(reason) = owner.refused(store, task_id, None).await? {
        warn!(task_id, %reason, "park refused");
        return Ok(false);
    }
    Ok(doorbell::store_park(store, bell, task_id, park, token)
        .await?
        .is_some())
}

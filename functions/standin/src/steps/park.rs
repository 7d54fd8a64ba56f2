//! The park step for push and off.

use super::StepError;
use crate::doorbell::{self, Doorbell};
use crate::row::RowStore;

/// The park step for push and off: store the token if this park is the newest; ring
/// itself if an event waits. A late or repeated invoke changes nothing.
pub async fn park<S: RowStore, D: Doorbell>(
    store: &S,
    bell: &D,
    task_id: &str,
    park: u64,
    token: &str,
) -> Result<bool, StepError> {
    Ok(doorbell::park(store, bell, task_id, park, token)
        .await?
        .is_some())
}

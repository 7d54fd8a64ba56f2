//! For tests: a row store wrapped to inject a race or a fault at one write (the product
//! wraps none: a note's journey is `outbox::tell`).

/// The row store's methods a test's store passes to `self.inner` unchanged, each named
/// once inside its role's impl (`StandIns`, `Parks`, `Notes`): a store that injects a
/// race at one write writes only that method.
#[macro_export]
macro_rules! row_store_pass_through {
    ($($method:ident),* $(,)?) => { $($crate::row_store_pass_through!(@ $method);)* };
    (@ create) => {
        async fn create(&self, row: &$crate::row::Row)
            -> Result<$crate::row::Row, $crate::row::StoreError> {
            self.inner.create(row).await
        }
    };
    (@ get) => {
        async fn get(&self, task_id: &str)
            -> Result<Option<$crate::row::Row>, $crate::row::StoreError> {
            self.inner.get(task_id).await
        }
    };
    (@ list) => {
        async fn list(&self, after: Option<&str>, limit: u32)
            -> Result<(Vec<$crate::row::Row>, Option<String>), $crate::row::StoreError> {
            self.inner.list(after, limit).await
        }
    };
    (@ list_of_agent) => {
        async fn list_of_agent(&self, agent: &str, after: Option<&str>, limit: u32)
            -> Result<(Vec<$crate::row::Row>, Option<String>), $crate::row::StoreError> {
            self.inner.list_of_agent(agent, after, limit).await
        }
    };
    (@ record) => {
        async fn record(&self, task_id: &str, event: &$crate::row::WakeEvent, guard: &$crate::row::Guard)
            -> Result<$crate::row::Row, $crate::row::StoreError> {
            self.inner.record(task_id, event, guard).await
        }
    };
    (@ park) => {
        async fn park(&self, task_id: &str, park: u64, token: &str)
            -> Result<$crate::row::Row, $crate::row::StoreError> {
            self.inner.park(task_id, park, token).await
        }
    };
    (@ end_hearing) => {
        async fn end_hearing(&self, task_id: &str, epoch: u64, id: &str)
            -> Result<(), $crate::row::StoreError> {
            self.inner.end_hearing(task_id, epoch, id).await
        }
    };
    (@ claim_hearing) => {
        async fn claim_hearing(&self, task_id: &str, guard: &$crate::row::Guard, id: &str, now_ms: u64, until_ms: u64)
            -> Result<$crate::row::HearingClaim, $crate::row::StoreError> {
            self.inner.claim_hearing(task_id, guard, id, now_ms, until_ms).await
        }
    };
    (@ claim_follow) => {
        async fn claim_follow(&self, task_id: &str, park: u64, token: &str, hop: u64)
            -> Result<$crate::row::Row, $crate::row::StoreError> {
            self.inner.claim_follow(task_id, park, token, hop).await
        }
    };
    (@ end_park) => {
        async fn end_park(&self, task_id: &str, park: u64)
            -> Result<$crate::row::Row, $crate::row::StoreError> {
            self.inner.end_park(task_id, park).await
        }
    };
    (@ roll) => {
        async fn roll(&self, task_id: &str, park: u64, to: u32, lease: &str, previous: Option<&str>)
            -> Result<$crate::row::Row, $crate::row::StoreError> {
            self.inner.roll(task_id, park, to, lease, previous).await
        }
    };
    (@ take_rung) => {
        async fn take_rung(&self, task_id: &str, rung: &$crate::row::Rung<'_>)
            -> Result<Option<$crate::row::Drained>, $crate::row::StoreError> {
            self.inner.take_rung(task_id, rung).await
        }
    };
    (@ drain) => {
        async fn drain(&self, task_id: &str, seen: Option<&$crate::row::Row>, park: u64)
            -> Result<$crate::row::Drained, $crate::row::StoreError> {
            self.inner.drain(task_id, seen, park).await
        }
    };
    (@ set_remote) => {
        async fn set_remote(&self, task_id: &str, remote_task_id: &str, context_id: Option<&str>)
            -> Result<$crate::row::Row, $crate::row::StoreError> {
            self.inner.set_remote(task_id, remote_task_id, context_id).await
        }
    };
    (@ set_watch) => {
        async fn set_watch(&self, task_id: &str, watch: &$crate::row::Watch)
            -> Result<$crate::row::Row, $crate::row::StoreError> {
            self.inner.set_watch(task_id, watch).await
        }
    };
    (@ notes) => {
        async fn notes(&self, task_id: &str, after: u64, limit: u32)
            -> Result<Vec<::standin_wire::ParentNote>, $crate::row::StoreError> {
            self.inner.notes(task_id, after, limit).await
        }
    };
    (@ apply) => {
        async fn apply(&self, task_id: &str, seen: Option<&$crate::row::Row>, out: &$crate::state::RemoteOut, guard: &$crate::row::Guard)
            -> Result<$crate::row::Applied, $crate::row::StoreError> {
            self.inner.apply(task_id, seen, out, guard).await
        }
    };
    (@ close) => {
        async fn close(&self, task_id: &str, final_note: Option<&$crate::state::RemoteOut>)
            -> Result<$crate::row::Closed, $crate::row::StoreError> {
            self.inner.close(task_id, final_note).await
        }
    };
}

//! For tests: a row store wrapped to inject a race or a fault at one write (the product
//! wraps none: a note's journey is `outbox::tell`).

/// The row store's methods a test's store passes to `self.inner` unchanged, each named
/// once inside its role's impl (`StandIns`, `Parks`, `Notes`): a store that injects a
/// race at one write writes only that method.
#[macro_export]
macro_rules! row_store_pass_through {
    ($($method:ident),* $(,)?) => { $($crate::row_store_pass_through!(@ $method);)* };
    // One method, by its signature.
    (@ $method:ident($($arg:ident: $ty:ty),* $(,)?) -> $out:ty) => {
        async fn $method(&self, $($arg: $ty),*) -> Result<$out, $crate::row::StoreError> {
            self.inner.$method($($arg),*).await
        }
    };
    (@ create) => {
        $crate::row_store_pass_through!(@ create(row: &$crate::row::Row) -> $crate::row::Row);
    };
    (@ get) => {
        $crate::row_store_pass_through!(@ get(task_id: &str) -> Option<$crate::row::Row>);
    };
    (@ list) => {
        $crate::row_store_pass_through!(@ list(
            after: Option<&str>, limit: u32
        ) -> (Vec<$crate::row::Row>, Option<String>));
    };
    (@ list_of_agent) => {
        $crate::row_store_pass_through!(@ list_of_agent(
            agent: &str, after: Option<&str>, limit: u32
        ) -> (Vec<$crate::row::Row>, Option<String>));
    };
    (@ record) => {
        $crate::row_store_pass_through!(@ record(
            task_id: &str, event: &$crate::row::WakeEvent, guard: &$crate::row::Guard
        ) -> $crate::row::Row);
    };
    (@ park) => {
        $crate::row_store_pass_through!(@ park(
            task_id: &str, park: u64, token: &str
        ) -> $crate::row::Row);
    };
    (@ end_hearing) => {
        $crate::row_store_pass_through!(@ end_hearing(task_id: &str, epoch: u64, id: &str) -> ());
    };
    (@ claim_hearing) => {
        $crate::row_store_pass_through!(@ claim_hearing(
            task_id: &str, guard: &$crate::row::Guard, id: &str, now_ms: u64, until_ms: u64
        ) -> $crate::row::HearingClaim);
    };
    (@ claim_follow) => {
        $crate::row_store_pass_through!(@ claim_follow(
            task_id: &str, park: u64, token: &str, hop: u64
        ) -> $crate::row::Row);
    };
    (@ end_park) => {
        $crate::row_store_pass_through!(@ end_park(task_id: &str, park: u64) -> $crate::row::Row);
    };
    (@ roll) => {
        $crate::row_store_pass_through!(@ roll(
            task_id: &str, park: u64, to: u32, lease: &str, previous: Option<&str>
        ) -> $crate::row::Row);
    };
    (@ take_rung) => {
        $crate::row_store_pass_through!(@ take_rung(
            task_id: &str, rung: &$crate::row::Rung<'_>
        ) -> Option<$crate::row::Drained>);
    };
    (@ drain) => {
        $crate::row_store_pass_through!(@ drain(
            task_id: &str, seen: Option<&$crate::row::Row>, park: u64
        ) -> $crate::row::Drained);
    };
    (@ set_remote) => {
        $crate::row_store_pass_through!(@ set_remote(
            task_id: &str, remote_task_id: &str, context_id: Option<&str>
        ) -> $crate::row::Row);
    };
    (@ set_watch) => {
        $crate::row_store_pass_through!(@ set_watch(
            task_id: &str, watch: &$crate::row::Watch
        ) -> $crate::row::Row);
    };
    (@ notes) => {
        $crate::row_store_pass_through!(@ notes(
            task_id: &str, after: u64, limit: u32
        ) -> Vec<::standin_wire::ParentNote>);
    };
    (@ apply) => {
        $crate::row_store_pass_through!(@ apply(
            task_id: &str,
            seen: Option<&$crate::row::Row>,
            out: &$crate::state::RemoteOut,
            guard: &$crate::row::Guard,
        ) -> $crate::row::Applied);
    };
    (@ close) => {
        $crate::row_store_pass_through!(@ close(
            task_id: &str, final_note: Option<&$crate::state::RemoteOut>
        ) -> $crate::row::Closed);
    };
}

//! The contract every [`RowStore`] keeps, as one suite run against each store: the
//! in-memory store in `functions/standin/tests/row_store.rs`, DynamoDB in
//! `tests/tests/dynamo_row_store.rs`. The doorbell's rules hold only if both stores
//! refuse, order and note alike, so they are checked by the same code.
//!
//! The macro `row_store_contract!` makes one test per check for a
//! store made by the given expression (a fresh, empty store each time).

#![allow(clippy::expect_used, clippy::unwrap_used)] // a contract check fails loudly

use super::{Applied, RowStore, StoreError};
use crate::push::PushToken;
use crate::row::{
    FollowOutcome, FollowReport, Guard, Row, Rung, Taken, WakeEvent, Watch, WatchMode,
};
use crate::state::{RemoteOut, remote_out};
use standin_wire::TaskState;

/// One `#[tokio::test]` per check of the contract, each on a fresh store from `$store`
/// (an expression, awaited inside the test if it is async).
#[macro_export]
macro_rules! row_store_contract {
    (@each $store:expr; $($check:ident,)*) => {$(
        #[::tokio::test]
        async fn $check() {
            let store = $store;
            $crate::row::contract::$check(&store).await;
        }
    )*};
    ($store:expr) => {
        $crate::row_store_contract!(
            @each $store;
            rows_round_trip_and_parks_start_epochs,
            a_late_or_repeated_park_is_refused_and_changes_nothing,
            a_handed_on_park_is_claimed_once_per_hand_on,
            drain_takes_by_priority_and_leaves_the_rest,
            drain_is_idempotent_per_park,
            a_drain_from_a_copy_takes_what_the_row_holds,
            take_rung_takes_only_the_push_the_ring_carried,
            guards_hold_in_the_write_itself,
            the_watchers_fence_closes_at_the_wake,
            apply_changes_once_notes_each_change_and_is_fenced,
            a_change_carrying_artifacts_is_noted_though_its_state_stayed,
            an_apply_to_a_copy_that_moved_decides_on_the_row_as_it_is,
            a_final_state_closes_the_row_with_its_note,
            close_is_first_final_and_writes_its_note_once,
            close_without_a_note_writes_none,
            the_note_log_reads_after_a_number_up_to_a_limit,
            list_pages_through_every_row_once,
            an_agents_stand_ins_are_listed_newest_first_a_page_at_a_time,
            replies_queue_up_to_the_bound_in_the_write_itself,
            a_named_reply_is_queued_once_in_the_write_itself,
            a_reply_s_parts_are_kept_and_taken_with_it,
            a_long_conversation_keeps_the_latest_reply_ids_only,
            a_roll_ends_the_park_and_keeps_its_first_lease,
            webhooks_are_set_bounded_marked_and_deleted,
            a_note_written_from_a_read_before_a_webhook_was_set_knows_the_webhook,
            a_hearing_is_claimed_only_by_the_push_s_guard_while_parked,
            one_hearing_runs_at_a_time_until_its_lease_or_its_park_ends,
            only_the_hearing_in_its_park_commits_once_with_its_report,
            a_hearing_that_told_nothing_ends_and_the_next_push_claims,
        );
    };
}

const ID: &str = "local/1?#";
const REMOTE: &str = "remote-1";

async fn push_row<S: RowStore>(store: &S) -> PushToken {
    let token = PushToken::generate();
    let row = Row::new(ID, "agent-a");
    store.create(&row).await.expect("created");
    assert_eq!(
        store.create(&row).await,
        Err(StoreError::AlreadyExists(ID.into()))
    );
    store
        .set_remote(ID, REMOTE, Some("ctx-1"))
        .await
        .expect("remote");
    let watch = Watch {
        mode: WatchMode::Push,
        config_id: Some("cfg".into()),
        token_digest: Some(token.digest()),
    };
    store.set_watch(ID, &watch).await.expect("watch");
    token
}

fn working(text: &str) -> RemoteOut {
    remote_out(REMOTE, TaskState::Working, text)
}

fn reply(text: &str) -> WakeEvent {
    WakeEvent::reply(text)
}

/// (seq, state, is_final) of every note of the stand-in, read back from the note log.
async fn notes<S: RowStore>(store: &S) -> Vec<(u64, TaskState, bool)> {
    store
        .notes(ID, 0, 100)
        .await
        .expect("notes")
        .into_iter()
        .map(|n| (n.seq, n.state, n.is_final))
        .collect()
}

mod hearings;
mod notes;
mod parks;
mod stand_ins;

pub use hearings::*;
pub use notes::*;
pub use parks::*;
pub use stand_ins::*;

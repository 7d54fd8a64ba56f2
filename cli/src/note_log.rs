//! One stand-in's notes, followed through its note log: nothing is taken off the parent's
//! queue, so `standin events ID` can run beside the parent that reads it.

use std::time::{Duration, Instant};

use standin_wire::{ParentNote, StandInStatus, TaskState};

use crate::control::ControlClient;
use crate::error::CliError;

/// How often the note log is read again while nothing new is there.
const EVERY: Duration = Duration::from_secs(1);

/// When following stops besides the stand-in's own stops.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    pub count: Option<usize>,
    pub idle: Option<Duration>,
}

/// Whether the stand-in waits on the parent: its newest note asks (input or
/// credentials), it is parked on it, and no reply is queued. A reply already sent is
/// queued, then taken into a turn that leaves the park: neither waits.
pub fn waits_on_parent(status: &StandInStatus) -> bool {
    matches!(
        status.summary.state,
        Some(TaskState::InputRequired | TaskState::AuthRequired)
    ) && status.parked
        && status.pending.replies == 0
}

/// Whether there is nothing more to hear for now, once every note through `shown` is
/// printed: the stand-in has ended (closed, or its execution no longer runs), or it waits
/// on the parent and its question has been shown.
pub fn nothing_more(status: &StandInStatus, shown: u64) -> bool {
    let ended = status.summary.closed
        || status
            .execution_status
            .as_deref()
            .is_some_and(|state| state != "RUNNING");
    ended || (status.summary.seq <= shown && waits_on_parent(status))
}

/// Prints the stand-in's notes after `after` as they come, and returns once its final
/// note is printed, once it has ended or waits on the parent's turn, or at a limit.
pub async fn follow(
    control: &ControlClient,
    id: &str,
    after: u64,
    limits: Limits,
    mut print: impl FnMut(&ParentNote),
) -> Result<(), CliError> {
    let (mut shown, mut printed) = (after, 0usize);
    let mut heard_at = Instant::now();
    loop {
        for note in control.notes(id, shown).await? {
            shown = note.seq;
            print(&note);
            printed += 1;
            heard_at = Instant::now();
            if note.is_final || limits.count.is_some_and(|c| printed >= c) {
                return Ok(());
            }
        }
        if nothing_more(&control.status(id).await?, shown) {
            // What was written between the read and the status is shown still.
            for note in control.notes(id, shown).await? {
                print(&note);
            }
            return Ok(());
        }
        if limits.idle.is_some_and(|idle| heard_at.elapsed() >= idle) {
            return Ok(());
        }
        tokio::time::sleep(EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use standin_wire::{PendingView, Summary};

    use super::*;

    fn status(seq: u64, parked: bool, replies: usize) -> StandInStatus {
        StandInStatus {
            summary: Summary {
                task_id: "t".into(),
                agent: "a".into(),
                remote_task_id: Some("r".into()),
                watch: None,
                state: Some(TaskState::InputRequired),
                text: None,
                closed: false,
                seq,
                created_at: None,
                last_note_at: None,
                context_id: None,
            },
            execution_arn: "arn".into(),
            execution_status: Some("RUNNING".into()),
            parked,
            pending: PendingView {
                cancel: false,
                replies,
                push: false,
            },
            replies_taken: Vec::new(),
        }
    }

    #[test]
    fn a_question_waits_on_the_parent_until_a_reply_is_queued_or_taken() {
        assert!(waits_on_parent(&status(3, true, 0)));
        assert!(!waits_on_parent(&status(3, true, 1)), "a reply is queued");
        assert!(
            !waits_on_parent(&status(3, false, 0)),
            "a turn is on its way"
        );
        let mut working = status(3, true, 0);
        working.summary.state = Some(TaskState::Working);
        assert!(!waits_on_parent(&working));
        working.summary.state = Some(TaskState::AuthRequired);
        assert!(waits_on_parent(&working));
    }

    #[test]
    fn following_stops_at_the_end_or_at_a_question_already_shown() {
        assert!(nothing_more(&status(3, true, 0), 3));
        assert!(
            !nothing_more(&status(3, true, 0), 2),
            "the question is still to show"
        );
        assert!(
            !nothing_more(&status(3, false, 0), 3),
            "a turn is on its way"
        );
        let mut ended = status(5, false, 0);
        ended.summary.closed = true;
        assert!(nothing_more(&ended, 9), "past the final note, too");
        let mut failed = status(2, false, 0);
        failed.execution_status = Some("FAILED".into());
        assert!(nothing_more(&failed, 0), "an execution that no longer runs");
    }
}

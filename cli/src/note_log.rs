//! One stand-in's notes, followed through its note log: nothing is taken off the parent's
//! queue, so `standin events ID` can run beside the parent that reads it.

use std::time::{Duration, Instant};

use standin_wire::{ParentNote, Status, TaskState};

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
pub fn waits_on_parent(newest: &ParentNote, status: &Status) -> bool {
    matches!(
        newest.state,
        TaskState::InputRequired | TaskState::AuthRequired
    ) && status.summary.seq == newest.seq
        && status.parked
        && status.pending.replies == 0
}

/// Prints the stand-in's notes after `after` as they come, and returns once its final
/// note is printed, once it waits on the parent's turn, or at a limit.
pub async fn follow(
    control: &ControlClient,
    id: &str,
    after: u64,
    limits: Limits,
    mut print: impl FnMut(&ParentNote),
) -> Result<(), CliError> {
    let (mut after, mut printed, mut newest) = (after, 0usize, None::<ParentNote>);
    let mut heard_at = Instant::now();
    loop {
        for note in control.notes(id, after).await? {
            after = note.seq;
            print(&note);
            printed += 1;
            heard_at = Instant::now();
            if note.is_final || limits.count.is_some_and(|c| printed >= c) {
                return Ok(());
            }
            newest = Some(note);
        }
        if let Some(note) = &newest
            && matches!(
                note.state,
                TaskState::InputRequired | TaskState::AuthRequired
            )
            && waits_on_parent(note, &control.status(id).await?)
        {
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
    use standin_wire::{Pending, Summary};

    use super::*;

    fn note(seq: u64, state: TaskState) -> ParentNote {
        ParentNote {
            task_id: "t".into(),
            remote_task_id: Some("r".into()),
            agent: "a".into(),
            state,
            text: "Which format?".into(),
            is_final: false,
            seq,
            at: "2026-12-04T00:00:00Z".into(),
            artifacts: Vec::new(),
            artifacts_omitted: 0,
            parts: Vec::new(),
        }
    }

    fn status(seq: u64, parked: bool, replies: usize) -> Status {
        Status {
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
            },
            execution_arn: "arn".into(),
            execution_status: Some("RUNNING".into()),
            parked,
            pending: Pending {
                cancel: false,
                replies,
                push: false,
            },
        }
    }

    #[test]
    fn a_question_waits_on_the_parent_until_a_reply_is_queued_or_taken() {
        let asked = note(3, TaskState::InputRequired);
        assert!(waits_on_parent(&asked, &status(3, true, 0)));
        assert!(
            !waits_on_parent(&asked, &status(3, true, 1)),
            "a reply is queued"
        );
        assert!(
            !waits_on_parent(&asked, &status(3, false, 0)),
            "a turn is on its way"
        );
        assert!(
            !waits_on_parent(&asked, &status(4, true, 0)),
            "a newer note exists"
        );
        assert!(!waits_on_parent(
            &note(3, TaskState::Working),
            &status(3, true, 0)
        ));
        assert!(waits_on_parent(
            &note(3, TaskState::AuthRequired),
            &status(3, true, 0)
        ));
    }
}

//! The soak's judge: from what the remote agent really did and what the parent received,
//! whether one stand-in kept its promises. Pure, so its rules are tested on their own.

/// A state change the agent made (its change log, in order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub state: String,
    pub text: String,
    pub at_ms: u64,
}

/// A note as the parent received it (duplicates included, in arrival order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    pub seq: u64,
    pub state: String,
    pub text: String,
    pub is_final: bool,
    pub received_ms: u64,
    /// When the stand-in wrote the note (its `at`), if it parses.
    pub written_ms: Option<u64>,
    /// When the parent's queue took it (its `SentTimestamp`), if SQS said.
    pub queued_ms: Option<u64>,
}

/// Milliseconds since the Unix epoch of an RFC 3339 UTC time as the stand-in writes it
/// (`2026-12-01T03:19:05.398Z`); days from civil after Howard Hinnant's algorithm.
pub fn epoch_ms(at: &str) -> Option<u64> {
    let b = at.as_bytes();
    if b.len() != 24 || b[4] != b'-' || b[10] != b'T' || b[19] != b'.' || b[23] != b'Z' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| at.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (hh, mm, ss, ms) = (n(11..13)?, n(14..16)?, n(17..19)?, n(20..23)?);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000) + ms).ok()
}

/// What the oracle found for one stand-in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    pub violations: Vec<String>,
    /// Notes received again under a seq already seen (the parent drops them by seq).
    pub duplicates: usize,
    /// Agent changes no note told (a newer one was heard first: allowed).
    pub coalesced: usize,
    /// For each note told: how long from the agent's change to the parent (ms).
    pub heard_ms: Vec<(u64, u64)>,
}

fn matches(note: &Received, change: &Change) -> bool {
    // A cancel's status may carry no message: then the note's text is the stand-in's own.
    note.state == change.state && (note.text == change.text || change.text.is_empty())
}

const TERMINAL: [&str; 4] = [
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
];

/// Judges one stand-in: `changes` is the agent's log for its task, `received` the notes;
/// `own_end` is the state of a final note the stand-in may decide without its agent (a
/// parent's cancel ends it CANCELED, an agent dead for good FAILED): the truth then even
/// though the agent's task never ended, but only while it was still open.
pub fn judge(changes: &[Change], received: &[Received], own_end: Option<&str>) -> Verdict {
    let mut verdict = Verdict::default();
    let mut firsts: Vec<&Received> = Vec::new();
    for note in received {
        match firsts.iter().find(|f| f.seq == note.seq) {
            Some(first) => {
                verdict.duplicates += 1;
                if (&first.state, &first.text, first.is_final)
                    != (&note.state, &note.text, note.is_final)
                {
                    verdict.violations.push(format!(
                        "seq {} came twice with different content: {:?} then {:?}",
                        note.seq, first.state, note.state
                    ));
                }
            }
            None => firsts.push(note),
        }
    }
    for (i, note) in firsts.iter().enumerate() {
        if note.seq != i as u64 + 1 {
            verdict.violations.push(format!(
                "note {} arrived with seq {} (expected {}: notes must come in order, 1..n, no gaps)",
                i + 1,
                note.seq,
                i + 1
            ));
            break;
        }
    }
    // The parent's cancel ends the stand-in CANCELED even when the agent never heard it,
    // and a dead agent's stand-in ends FAILED (its task still open): that final note is
    // the stand-in's truth, not an agent state.
    let own_end_told = own_end.is_some_and(|state| {
        firsts
            .last()
            .is_some_and(|n| n.is_final && n.state == state)
    }) && changes
        .last()
        .is_none_or(|c| !TERMINAL.contains(&c.state.as_str()));
    let told = if own_end_told {
        &firsts[..firsts.len() - 1]
    } else {
        &firsts[..]
    };
    let mut next = 0usize;
    for note in told {
        match changes[next.min(changes.len())..]
            .iter()
            .position(|c| matches(note, c))
        {
            Some(offset) => {
                let at = next + offset;
                verdict.coalesced += offset;
                verdict.heard_ms.push((
                    changes[at].at_ms,
                    note.received_ms.saturating_sub(changes[at].at_ms),
                ));
                next = at + 1;
            }
            None => verdict.violations.push(format!(
                "seq {} tells {} {:?}, which the agent never had after the previous note",
                note.seq, note.state, note.text
            )),
        }
    }
    let finals: Vec<&&Received> = firsts.iter().filter(|n| n.is_final).collect();
    match (finals.as_slice(), changes.last()) {
        ([], _) => verdict.violations.push("no final note".to_owned()),
        ([last], Some(truth)) => {
            if firsts.last().map(|n| n.seq) != Some(last.seq) {
                verdict.violations.push(format!(
                    "a note came after the final one (seq {})",
                    last.seq
                ));
            }
            if !matches(last, truth) && !own_end_told {
                verdict.violations.push(format!(
                    "the final note says {} {:?}, the agent ended {} {:?}",
                    last.state, last.text, truth.state, truth.text
                ));
            }
        }
        ([_], None) => verdict
            .violations
            .push("a final note, but the agent has no task".to_owned()),
        (many, _) => verdict
            .violations
            .push(format!("{} final notes", many.len())),
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(state: &str, text: &str, at_ms: u64) -> Change {
        Change {
            state: state.into(),
            text: text.into(),
            at_ms,
        }
    }

    fn note(seq: u64, state: &str, text: &str, is_final: bool, received_ms: u64) -> Received {
        Received {
            seq,
            state: state.into(),
            text: text.into(),
            is_final,
            received_ms,
            written_ms: None,
            queued_ms: None,
        }
    }

    #[test]
    fn note_times_parse_to_epoch_milliseconds() {
        assert_eq!(epoch_ms("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            epoch_ms("2026-12-01T03:19:05.398Z"),
            Some(1_796_095_145_398)
        );
        assert_eq!(
            epoch_ms("2024-02-29T12:00:00.001Z"),
            Some(1_709_208_000_001)
        );
        assert_eq!(epoch_ms("yesterday"), None);
    }

    fn log() -> Vec<Change> {
        vec![
            change("TASK_STATE_WORKING", "t0", 100),
            change("TASK_STATE_WORKING", "p0", 200),
            change("TASK_STATE_INPUT_REQUIRED", "q1", 300),
            change("TASK_STATE_WORKING", "t1", 400),
            change("TASK_STATE_COMPLETED", "done", 500),
        ]
    }

    #[test]
    fn a_faithful_stand_in_passes_and_its_latency_is_measured() {
        let notes = vec![
            note(1, "TASK_STATE_WORKING", "t0", false, 150),
            note(2, "TASK_STATE_WORKING", "p0", false, 260),
            note(3, "TASK_STATE_INPUT_REQUIRED", "q1", false, 390),
            note(4, "TASK_STATE_WORKING", "t1", false, 410),
            note(5, "TASK_STATE_COMPLETED", "done", true, 900),
        ];
        let v = judge(&log(), &notes, None);
        assert_eq!(v.violations, Vec::<String>::new());
        assert_eq!(
            v.heard_ms,
            vec![(100, 50), (200, 60), (300, 90), (400, 10), (500, 400)]
        );
    }

    #[test]
    fn coalescing_and_duplicates_are_counted_not_failed() {
        let notes = vec![
            note(1, "TASK_STATE_WORKING", "p0", false, 250),
            note(1, "TASK_STATE_WORKING", "p0", false, 260),
            note(2, "TASK_STATE_INPUT_REQUIRED", "q1", false, 390),
            note(3, "TASK_STATE_COMPLETED", "done", true, 900),
        ];
        let v = judge(&log(), &notes, None);
        assert_eq!(v.violations, Vec::<String>::new());
        assert_eq!((v.coalesced, v.duplicates), (2, 1));
    }

    #[test]
    fn a_gap_a_reorder_a_lie_or_a_wrong_ending_fails() {
        let gap = vec![
            note(1, "TASK_STATE_WORKING", "t0", false, 150),
            note(3, "TASK_STATE_COMPLETED", "done", true, 900),
        ];
        assert!(judge(&log(), &gap, None).violations[0].contains("seq 3"));
        let reordered = vec![
            note(2, "TASK_STATE_WORKING", "p0", false, 260),
            note(1, "TASK_STATE_WORKING", "t0", false, 270),
            note(3, "TASK_STATE_COMPLETED", "done", true, 900),
        ];
        assert!(!judge(&log(), &reordered, None).violations.is_empty());
        let backwards = vec![
            note(1, "TASK_STATE_WORKING", "p0", false, 260),
            note(2, "TASK_STATE_WORKING", "t0", false, 270),
            note(3, "TASK_STATE_COMPLETED", "done", true, 900),
        ];
        assert!(judge(&log(), &backwards, None).violations[0].contains("never had"));
        let wrong_end = vec![note(1, "TASK_STATE_FAILED", "turn failed", true, 900)];
        let v = judge(&log(), &wrong_end, None);
        assert!(v.violations.iter().any(|m| m.contains("never had")));
        assert!(v.violations.iter().any(|m| m.contains("the agent ended")));
        let unfinished = vec![note(1, "TASK_STATE_WORKING", "t0", false, 150)];
        assert_eq!(
            judge(&log(), &unfinished, None).violations,
            vec!["no final note".to_owned()]
        );
        let twice = vec![
            note(1, "TASK_STATE_WORKING", "t0", false, 150),
            note(1, "TASK_STATE_COMPLETED", "done", true, 900),
        ];
        assert!(judge(&log(), &twice, None).violations[0].contains("different content"));
    }

    #[test]
    fn a_parent_cancel_that_never_reached_the_agent_is_truthful_only_while_the_task_was_open() {
        let open = vec![change("TASK_STATE_WORKING", "t0", 1)];
        let notes = vec![
            note(1, "TASK_STATE_WORKING", "t0", false, 5),
            note(2, "TASK_STATE_CANCELED", "cancelled by the parent", true, 9),
        ];
        assert_eq!(
            judge(&open, &notes, Some("TASK_STATE_CANCELED")).violations,
            Vec::<String>::new()
        );
        assert!(
            judge(&open, &notes, None)
                .violations
                .iter()
                .any(|m| m.contains("the agent ended"))
        );
        let done = vec![
            change("TASK_STATE_WORKING", "t0", 1),
            change("TASK_STATE_COMPLETED", "done", 2),
        ];
        assert!(
            judge(&done, &notes, Some("TASK_STATE_CANCELED"))
                .violations
                .iter()
                .any(|m| m.contains("the agent ended"))
        );
    }

    #[test]
    fn a_dead_agents_stand_in_may_end_failed_while_the_task_is_open() {
        let open = vec![change("TASK_STATE_WORKING", "t0", 1)];
        let notes = vec![
            note(1, "TASK_STATE_WORKING", "t0", false, 5),
            note(2, "TASK_STATE_FAILED", "agent unreachable", true, 9),
        ];
        let dead = Some("TASK_STATE_FAILED");
        assert_eq!(judge(&open, &notes, dead).violations, Vec::<String>::new());
        assert!(
            !judge(&open, &notes, Some("TASK_STATE_CANCELED"))
                .violations
                .is_empty(),
            "only the end the stand-in may decide"
        );
    }

    #[test]
    fn a_parent_cancel_without_a_message_matches_the_stand_ins_text() {
        let changes = vec![
            change("TASK_STATE_WORKING", "t0", 1),
            change("TASK_STATE_CANCELED", "", 2),
        ];
        let notes = vec![
            note(1, "TASK_STATE_WORKING", "t0", false, 5),
            note(2, "TASK_STATE_CANCELED", "canceled by the parent", true, 9),
        ];
        assert_eq!(
            judge(&changes, &notes, Some("TASK_STATE_CANCELED")).violations,
            Vec::<String>::new()
        );
    }
}

//! A stand-in's changes over time, as a small SVG drawn on the server: on one time axis,
//! when the parent said each turn, when the agent says each change happened, and when
//! the parent heard it, each change's two marks joined by a line (its hearing delay).

use std::fmt::Write;

use standin_wire::{ParentNote, TurnView};

use super::time::{millis, span};
use crate::events::short_state;

const WIDTH: f64 = 720.0;
const LEFT: f64 = 120.0;
const RIGHT: f64 = 24.0;
const SAID_Y: f64 = 28.0;
const CHANGED_Y: f64 = 68.0;
const HEARD_Y: f64 = 108.0;
const AXIS_Y: f64 = 132.0;
const HEIGHT: f64 = 156.0;
/// How far an agent's own timestamp may lie from when its note was told and still be
/// drawn: a clock far off (or a made-up time) would squash every other mark.
const BELIEVABLE_MS: u64 = 3_600_000;

/// The chart, or None when nothing in it has a time that reads.
pub(crate) fn timeline(notes: &[ParentNote], turns: &[TurnView]) -> Option<String> {
    let said: Vec<(u64, &TurnView)> = turns
        .iter()
        .filter_map(|t| Some((millis(&t.at)?, t)))
        .collect();
    let heard: Vec<(u64, Option<u64>, &ParentNote)> = notes
        .iter()
        .filter_map(|n| {
            let told = millis(&n.at)?;
            let changed = n.changed_at.as_deref().and_then(millis);
            Some((
                told,
                changed.filter(|c| c.abs_diff(told) <= BELIEVABLE_MS),
                n,
            ))
        })
        .collect();
    let times = said
        .iter()
        .map(|(t, _)| *t)
        .chain(heard.iter().flat_map(|(h, c, _)| [Some(*h), *c]).flatten());
    let (first, last) = times.fold(None, |span: Option<(u64, u64)>, t| {
        Some(span.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t))))
    })?;
    let length = (last - first).max(1000);
    let x = |t: u64| LEFT + (t - first) as f64 / length as f64 * (WIDTH - LEFT - RIGHT);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="chart-title"><title id="chart-title">When the parent said each turn, when the agent says each change happened, and when the parent heard it, over {}</title>"#,
        span(length)
    );
    for (y, label) in [
        (SAID_Y, "parent said"),
        (CHANGED_Y, "agent changed"),
        (HEARD_Y, "parent heard"),
    ] {
        let _ = write!(
            svg,
            r#"<text class="lane" x="8" y="{}">{label}</text><line class="lane" x1="{LEFT}" y1="{y}" x2="{}" y2="{y}"/>"#,
            y + 4.0,
            WIDTH - RIGHT
        );
    }
    for (at, turn) in &said {
        let cx = x(*at);
        let _ = write!(
            svg,
            r#"<path class="turn" d="M{cx:.1} {} l6 8 h-12 z"><title>{} at {}</title></path>"#,
            SAID_Y - 5.0,
            match turn.kind {
                standin_wire::TurnKind::Start => "the start",
                standin_wire::TurnKind::Reply => "a reply",
            },
            escape(&turn.at)
        );
    }
    for (heard_at, changed_at, note) in &heard {
        let (hx, state) = (x(*heard_at), short_state(note.state.as_str()));
        let mut title = format!("note {} {state}: heard at {}", note.seq, escape(&note.at));
        if let Some(changed) = changed_at {
            let cx = x(*changed);
            let delay = heard_at.saturating_sub(*changed);
            let _ = write!(title, ", {} after the agent's change", span(delay));
            let _ = write!(
                svg,
                r#"<line class="delay" x1="{cx:.1}" y1="{CHANGED_Y}" x2="{hx:.1}" y2="{HEARD_Y}"/><circle class="change {class}" cx="{cx:.1}" cy="{CHANGED_Y}" r="5"/>"#,
                class = css_class(state)
            );
        }
        let _ = write!(
            svg,
            r#"<circle class="note {class}" cx="{hx:.1}" cy="{HEARD_Y}" r="6"><title>{title}</title></circle><text class="seq" x="{hx:.1}" y="{}">{}</text>"#,
            HEARD_Y + 18.0,
            note.seq,
            class = css_class(state)
        );
    }
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{LEFT}" y1="{AXIS_Y}" x2="{}" y2="{AXIS_Y}"/><text class="tick" x="{LEFT}" y="{}">0 s</text><text class="tick end" x="{}" y="{}">{}</text></svg>"#,
        WIDTH - RIGHT,
        AXIS_Y + 16.0,
        WIDTH - RIGHT,
        AXIS_Y + 16.0,
        span(length)
    );
    Some(svg)
}

/// The CSS class of a state: `input-required` for INPUT_REQUIRED.
pub(crate) fn css_class(state: &str) -> String {
    short_state(state).to_ascii_lowercase().replace('_', "-")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use standin_wire::{TaskState, TurnKind};

    use super::*;

    fn note(seq: u64, at: &str, changed_at: Option<&str>, state: TaskState) -> ParentNote {
        ParentNote {
            task_id: "t".into(),
            remote_task_id: Some("r".into()),
            agent: "a".into(),
            state,
            text: "x".into(),
            is_final: state.is_terminal(),
            seq,
            at: at.into(),
            changed_at: changed_at.map(str::to_owned),
            watch: None,
            artifacts: vec![],
            artifacts_omitted: 0,
            parts: vec![],
            trace_id: None,
        }
    }

    #[test]
    fn each_change_is_drawn_where_the_agent_made_it_and_where_the_parent_heard_it() {
        let turns = [TurnView {
            kind: TurnKind::Start,
            turn_id: "start".into(),
            after_seq: 0,
            at: "2026-12-06T10:00:00Z".into(),
            text: "go".into(),
            parts: vec![],
        }];
        let notes = [
            note(
                1,
                "2026-12-06T10:00:02Z",
                Some("2026-12-06T10:00:01.9"),
                TaskState::Working,
            ),
            note(2, "2026-12-06T10:00:10Z", None, TaskState::Completed),
        ];
        let svg = timeline(&notes, &turns).unwrap_or_default();
        assert_eq!(svg.matches("<circle class=\"note").count(), 2);
        assert_eq!(
            svg.matches("<circle class=\"change").count(),
            1,
            "only note 1 has the agent's time"
        );
        assert!(
            svg.contains(
                "note 1 WORKING: heard at 2026-12-06T10:00:02Z, 100 ms after the agent's change"
            ),
            "{svg}"
        );
        assert!(svg.contains("class=\"note completed\""));
        assert_eq!(svg.matches("class=\"turn\"").count(), 1);
        // The axis spans the first turn to the last note: the start sits at its left end.
        assert!(svg.contains(&format!("M{LEFT:.1} ")), "{svg}");
        assert!(svg.contains(">10 s</text></svg>"), "{svg}");
    }

    #[test]
    fn an_agent_clock_far_off_is_not_drawn() {
        let notes = [
            note(
                1,
                "2026-12-06T10:00:02Z",
                Some("1970-01-01T00:00:00Z"),
                TaskState::Working,
            ),
            note(
                2,
                "2026-12-06T10:00:04Z",
                Some("2026-12-06T10:00:03.5Z"),
                TaskState::Completed,
            ),
        ];
        let svg = timeline(&notes, &[]).unwrap_or_default();
        assert_eq!(svg.matches("<circle class=\"change").count(), 1, "{svg}");
        assert!(
            svg.contains(">2 s</text></svg>"),
            "the axis spans the notes: {svg}"
        );
    }

    #[test]
    fn nothing_with_a_time_draws_no_chart() {
        assert_eq!(timeline(&[], &[]), None);
        let unreadable = note(1, "later", None, TaskState::Working);
        assert_eq!(timeline(&[unreadable], &[]), None);
    }
}

//! The pages as templates fill them: plain text fields, shaped from what the control API
//! answered. Askama escapes every field; only the chart, drawn here, goes in as markup.

use askama::Template;
use serde_json::Value;
use standin_wire::{
    AgentView, ArtifactView, ParentNote, PartKind, PartView, StandInStatus, Summary, TurnKind,
    TurnView,
};

use super::chart::css_class;
use super::time::{ago, now_millis};
pub(crate) use crate::control::segment;
use crate::events::short_state;

/// The states a list can be filtered by, as the notes name them.
pub(crate) const STATES: [&str; 9] = [
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_AUTH_REQUIRED",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_UNSPECIFIED",
];

pub(crate) struct Choice {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

pub(crate) struct ListRow {
    pub id: String,
    pub href: String,
    pub state: String,
    pub state_class: String,
    pub agent: String,
    pub watch: String,
    pub age: String,
    pub quiet: String,
    pub text: String,
}

#[derive(Template)]
#[template(path = "console/list.html")]
pub(crate) struct ListPage {
    pub stack: String,
    pub rows: Vec<ListRow>,
    pub states: Vec<Choice>,
    pub agents: Vec<Choice>,
    pub next: Option<String>,
    pub filtered: bool,
}

pub(crate) fn list_row(row: &Summary, now: u64) -> ListRow {
    let state = row
        .state
        .map_or("-", |s| short_state(s.as_str()))
        .to_owned();
    ListRow {
        id: row.task_id.clone(),
        href: format!("/standins/{}", segment(&row.task_id)),
        state_class: css_class(&state),
        state,
        agent: row.agent.clone(),
        watch: row.watch.map_or("-", |w| w.as_str()).to_owned(),
        age: ago(row.created_at.as_deref(), now),
        quiet: ago(row.last_note_at.as_deref(), now),
        text: clip(row.text.as_deref().unwrap_or("-"), 140),
    }
}

/// One line of a conversation: a turn of the parent's or a note it heard.
pub(crate) struct Entry {
    pub from_parent: bool,
    pub heading: String,
    pub state_class: String,
    pub at: String,
    pub text: String,
    pub details: Vec<Detail>,
}

/// A part beside the text: data (shown as JSON), a link, a file, an artifact.
pub(crate) struct Detail {
    pub label: String,
    pub body: String,
    pub href: Option<String>,
}

pub(crate) struct Fact {
    pub name: &'static str,
    pub value: String,
}

pub(crate) struct ArtifactRow {
    pub name: String,
    pub href: String,
    pub summary: String,
}

/// What the reply form shows: what was typed, and what the API said of it.
#[derive(Default)]
pub(crate) struct ReplyForm {
    /// The reply's name, drawn for each form shown: a second click sends it again, and
    /// the stand-in takes it once.
    pub reply_id: String,
    pub text: String,
    pub data: String,
    pub text_error: Option<String>,
    pub data_error: Option<String>,
    pub error: Option<String>,
}

#[derive(Default)]
pub(crate) struct CancelForm {
    pub reason: String,
    pub error: Option<String>,
}

#[derive(Template)]
#[template(path = "console/stand_in.html")]
pub(crate) struct StandInPage {
    pub stack: String,
    pub id: String,
    pub href: String,
    pub state: String,
    pub state_class: String,
    pub closed: bool,
    pub facts: Vec<Fact>,
    pub entries: Vec<Entry>,
    pub chart: Option<String>,
    pub artifacts: Vec<ArtifactRow>,
    pub reply: ReplyForm,
    pub cancel: CancelForm,
    pub notice: Option<String>,
    /// What the API refused when the forms are gone (the stand-in has ended).
    pub alert: Option<String>,
    pub token: String,
}

/// The stand-in's facts, in the order an operator asks them.
pub(crate) fn facts(status: &StandInStatus) -> Vec<Fact> {
    let row = &status.summary;
    let now = now_millis();
    let pending = &status.pending;
    let waiting = [
        (pending.replies > 0).then(|| format!("{} replies", pending.replies)),
        pending.cancel.then(|| "a cancel".to_owned()),
        pending.push.then(|| "a push".to_owned()),
    ];
    let waiting: Vec<String> = waiting.into_iter().flatten().collect();
    vec![
        fact("Agent", &row.agent),
        fact(
            "Watch",
            row.watch
                .map_or("- (chosen after the first turn)", |w| w.as_str()),
        ),
        fact("Remote task", row.remote_task_id.as_deref().unwrap_or("-")),
        fact("Notes", &row.seq.to_string()),
        fact(
            "Started",
            &match row.created_at.as_deref() {
                Some(at) => format!("{at} ({} ago)", ago(Some(at), now)),
                None => "-".to_owned(),
            },
        ),
        fact(
            "Last note",
            &match row.last_note_at.as_deref() {
                Some(at) => format!("{} ago", ago(Some(at), now)),
                None => "-".to_owned(),
            },
        ),
        fact(
            "Waiting to be taken",
            &if waiting.is_empty() {
                "nothing".to_owned()
            } else {
                waiting.join(", ")
            },
        ),
        fact(
            "Execution",
            &format!(
                "{} ({})",
                status.execution_arn,
                status
                    .execution_status
                    .as_deref()
                    .unwrap_or("Step Functions did not answer")
            ),
        ),
    ]
}

fn fact(name: &'static str, value: &str) -> Fact {
    Fact {
        name,
        value: value.to_owned(),
    }
}

/// The conversation in order: each turn sits after the note it came after.
pub(crate) fn conversation(id: &str, notes: &[ParentNote], turns: &[TurnView]) -> Vec<Entry> {
    let mut turns: Vec<&TurnView> = turns.iter().collect();
    turns.sort_by_key(|t| t.order());
    let mut entries = Vec::new();
    let mut turns = turns.into_iter().peekable();
    let mut watch = None;
    for note in notes {
        while let Some(turn) = turns.next_if(|t| t.after_seq < note.seq) {
            entries.push(turn_entry(turn));
        }
        let mut entry = note_entry(id, note);
        // The watch as it changes: its first, and each change after (push to follow, say).
        if note.watch.is_some() && note.watch != watch {
            let now = note.watch.map_or("-", |w| w.as_str());
            let body = match watch {
                Some(was) => format!("now {now} (was {})", was.as_str()),
                None => format!("{now} from here on"),
            };
            entry.details.insert(
                0,
                Detail {
                    label: "Watch".to_owned(),
                    body,
                    href: None,
                },
            );
            watch = note.watch;
        }
        entries.push(entry);
    }
    entries.extend(turns.map(turn_entry));
    entries
}

fn turn_entry(turn: &TurnView) -> Entry {
    Entry {
        from_parent: true,
        heading: match turn.kind {
            TurnKind::Start => "The parent started it".to_owned(),
            TurnKind::Reply => "The parent replied".to_owned(),
        },
        state_class: "parent".to_owned(),
        at: turn.at.clone(),
        text: turn.text.clone(),
        details: turn
            .parts
            .iter()
            .map(|part| Detail {
                label: "Sent with it".to_owned(),
                body: serde_json::to_value(part)
                    .map_or_else(|_| String::new(), |v| pretty(&shortened(v))),
                href: None,
            })
            .collect(),
    }
}

fn note_entry(id: &str, note: &ParentNote) -> Entry {
    let state = short_state(note.state.as_str());
    let mut details: Vec<Detail> = note.parts.iter().map(part_detail).collect();
    details.extend(note.artifacts.iter().map(|artifact| Detail {
        label: "Artifact".to_owned(),
        body: artifact_name(artifact),
        href: Some(artifact_href(id, artifact)),
    }));
    if note.artifacts_omitted > 0 {
        details.push(Detail {
            label: "Artifacts".to_owned(),
            body: format!("{} more, listed under Artifacts", note.artifacts_omitted),
            href: None,
        });
    }
    let mut at = match &note.changed_at {
        Some(changed) => format!("{} (the agent says {changed})", note.at),
        None => note.at.clone(),
    };
    if let Some(watch) = note.watch {
        at.push_str(&format!(" · watching by {}", watch.as_str()));
    }
    Entry {
        from_parent: false,
        heading: format!(
            "Note {}: {state}{}",
            note.seq,
            if note.is_final { " (final)" } else { "" }
        ),
        state_class: css_class(state),
        at,
        text: note.text.clone(),
        details,
    }
}

/// A status part: a question's form or data as JSON, a link, a file described.
fn part_detail(part: &PartView) -> Detail {
    let (label, body) = match (&part.kind, &part.data, &part.url) {
        (PartKind::Data, Some(data), _) => ("Data", pretty(data)),
        (PartKind::Url, _, Some(url)) => ("Link", url.clone()),
        (_, _, _) if part.text.is_some() => ("Text", part.text.clone().unwrap_or_default()),
        _ => ("File", describe(part)),
    };
    Detail {
        label: label.to_owned(),
        body,
        href: None,
    }
}

pub(crate) fn describe(part: &PartView) -> String {
    let mut words = vec![part.filename.clone().unwrap_or_else(|| "(unnamed)".into())];
    words.extend(part.media_type.clone());
    words.extend(part.size.map(|s| format!("{s} bytes")));
    words.join(", ")
}

pub(crate) fn artifact_rows(id: &str, artifacts: &[ArtifactView]) -> Vec<ArtifactRow> {
    artifacts
        .iter()
        .map(|artifact| ArtifactRow {
            name: artifact_name(artifact),
            href: artifact_href(id, artifact),
            summary: format!(
                "{} part(s){}",
                artifact.parts.len(),
                if artifact.complete {
                    ""
                } else {
                    ", still growing"
                }
            ),
        })
        .collect()
}

fn artifact_name(artifact: &ArtifactView) -> String {
    artifact
        .name
        .clone()
        .unwrap_or_else(|| artifact.artifact_id.clone())
}

fn artifact_href(id: &str, artifact: &ArtifactView) -> String {
    format!(
        "/standins/{}/artifacts/{}",
        segment(id),
        segment(&artifact.artifact_id)
    )
}

pub(crate) struct PartPreview {
    pub label: String,
    pub text: Option<String>,
    pub image: Option<String>,
    pub download: Option<String>,
}

#[derive(Template)]
#[template(path = "console/artifact.html")]
pub(crate) struct ArtifactPage {
    pub stack: String,
    pub id: String,
    pub back: String,
    pub name: String,
    pub description: String,
    pub parts: Vec<PartPreview>,
}

pub(crate) struct AgentRow {
    pub id: String,
    pub source: String,
    pub name: String,
    pub skills: String,
    pub dialect: String,
    pub watch: String,
    pub url: String,
    pub reachable: String,
    pub reachable_class: &'static str,
    pub secret: String,
}

#[derive(Template)]
#[template(path = "console/agents.html")]
pub(crate) struct AgentsPage {
    pub stack: String,
    pub rows: Vec<AgentRow>,
}

/// An agent as the page shows it: never a secret's value (an entry holds none; the page
/// shows only what the entry names).
pub(crate) fn agent_row(view: &AgentView) -> AgentRow {
    let field = |name: &str| view.agent[name].as_str().unwrap_or_default().to_owned();
    let card = view.card.clone().unwrap_or_default();
    let (reachable, reachable_class) = match (&view.card, &card.error) {
        (None, _) => ("not read".to_owned(), "unknown"),
        (Some(_), Some(error)) => (format!("no: {error}"), "no"),
        (Some(_), None) => ("yes".to_owned(), "yes"),
    };
    AgentRow {
        id: field("id"),
        source: view.source.clone(),
        name: card.name,
        skills: card
            .skills
            .iter()
            .map(|s| {
                if s.name.is_empty() {
                    s.id.clone()
                } else {
                    s.name.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
        dialect: Some(field("version"))
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "from its card".into()),
        watch: Some(field("updates"))
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "auto".into()),
        url: without_credentials(&field("url")),
        reachable,
        reachable_class,
        secret: view.agent["auth"]["secret"]
            .as_str()
            .unwrap_or("-")
            .to_owned(),
    }
}

/// A part as the timeline shows it: a long string (a file's bytes inline) stands as its
/// length, so the page stays readable.
fn shortened(value: Value) -> Value {
    match value {
        Value::String(text) if text.len() > 200 => {
            Value::String(format!("({} characters)", text.chars().count()))
        }
        Value::Array(items) => Value::Array(items.into_iter().map(shortened).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(name, v)| (name, shortened(v)))
                .collect(),
        ),
        other => other,
    }
}

/// An agent's URL without what could be a credential: its user part and its query.
fn without_credentials(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            if parsed.query().is_some() {
                parsed.set_query(Some("…"));
            }
            parsed.to_string()
        }
        Err(_) => "(not a URL)".to_owned(),
    }
}

pub(crate) fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[derive(Template)]
#[template(path = "console/error.html")]
pub(crate) struct ErrorPage {
    pub stack: String,
    pub title: String,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use standin_wire::{CardView, TaskState};

    use super::*;

    fn note(seq: u64, state: TaskState, text: &str) -> ParentNote {
        serde_json::from_value(json!({
            "task_id": "t", "remote_task_id": "r", "agent": "a", "state": state,
            "text": text, "final": state.is_terminal(), "seq": seq,
            "at": format!("2026-12-06T10:00:0{seq}Z"),
        }))
        .unwrap_or_else(|e| panic!("a note: {e}"))
    }

    fn turn(kind: TurnKind, after_seq: u64, text: &str) -> TurnView {
        TurnView {
            kind,
            turn_id: if kind == TurnKind::Start {
                "start".into()
            } else {
                format!("r{after_seq}")
            },
            after_seq,
            at: "2026-12-06T10:00:00Z".into(),
            text: text.into(),
            parts: vec![],
        }
    }

    #[test]
    fn each_turn_sits_after_the_note_it_followed() {
        let notes = [
            note(1, TaskState::InputRequired, "Which colour?"),
            note(2, TaskState::Working, "Painting"),
            note(3, TaskState::Completed, "Painted blue"),
        ];
        let turns = [
            turn(TurnKind::Reply, 1, "blue"),
            turn(TurnKind::Start, 0, "Paint it"),
        ];
        let entries = conversation("t", &notes, &turns);
        let texts: Vec<&str> = entries.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Paint it",
                "Which colour?",
                "blue",
                "Painting",
                "Painted blue"
            ]
        );
        let mut watched = notes.clone();
        watched[1].watch = Some(standin_wire::WatchMode::Push);
        watched[2].watch = Some(standin_wire::WatchMode::Poll);
        let shown = conversation("t", &watched, &[]);
        let watch_lines: Vec<&str> = shown
            .iter()
            .flat_map(|e| e.details.iter().filter(|d| d.label == "Watch"))
            .map(|d| d.body.as_str())
            .collect();
        assert_eq!(watch_lines, ["push from here on", "now poll (was push)"]);
        assert!(
            shown[2].at.ends_with("· watching by poll"),
            "{}",
            shown[2].at
        );
        let late = [turn(TurnKind::Reply, 3, "thanks")];
        let last = conversation("t", &notes, &late).pop().map(|e| e.text);
        assert_eq!(
            last.as_deref(),
            Some("thanks"),
            "a turn after the last note ends it"
        );
    }

    #[test]
    fn an_agent_row_names_its_secret_and_shows_no_header_value() {
        let view = AgentView {
            source: "registry".into(),
            agent: json!({"id": "w", "url": "https://me:pw@w.example/a2a?key=k1", "version": "0.3",
                "headers": {"X-Team": "blue-team-value"},
                "auth": {"scheme": "bearer", "secret": "writer-token"}}),
            card: Some(CardView {
                error: Some("card did not read: timeout".into()),
                ..CardView::default()
            }),
        };
        let row = agent_row(&view);
        assert_eq!(row.secret, "writer-token");
        assert_eq!(row.dialect, "0.3");
        assert_eq!(row.watch, "auto");
        assert_eq!(
            (row.reachable.as_str(), row.reachable_class),
            ("no: card did not read: timeout", "no")
        );
        let page = AgentsPage {
            stack: "s".into(),
            rows: vec![row],
        }
        .render()
        .unwrap_or_default();
        assert!(
            page.contains("writer-token") && !page.contains("blue-team-value"),
            "{page}"
        );
        assert!(
            page.contains("https://w.example/a2a?") && !page.contains("pw") && !page.contains("k1"),
            "{page}"
        );
    }

    #[test]
    fn what_an_agent_wrote_is_escaped_on_the_page() {
        let mut row = list_row(
            &serde_json::from_value(
                json!({"task_id": "t<1>", "agent": "a", "remote_task_id": null,
                "watch": "push", "state": "TASK_STATE_WORKING", "text": "<script>alert(1)</script>",
                "closed": false, "seq": 1, "created_at": null}),
            )
            .unwrap_or_else(|e| panic!("a summary: {e}")),
            0,
        );
        row.quiet = "-".into();
        let page = ListPage {
            stack: "s".into(),
            rows: vec![row],
            states: vec![],
            agents: vec![],
            next: None,
            filtered: false,
        }
        .render()
        .unwrap_or_default();
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(
            page.contains("&#60;script&#62;alert(1)") || page.contains("&lt;script&gt;alert(1)"),
            "{page}"
        );
        assert!(page.contains("href=\"/standins/t%3C1%3E\""), "{page}");
    }
}

//! What an agent says through its artifacts when its status says nothing: some agents
//! end with no status message and leave the answer in an artifact, or ask through an
//! artifact's data alone (docs/frameworks.md). The last artifact the agent gave then
//! speaks for the status, by one rule for every reader (a turn, a follow, a get).

use crate::model::{Artifact, ArtifactUpdate, Content, ContentKind, Part, Status};
use standin_wire::TaskState;

/// Most of an artifact's words kept: a note's text is bounded further on, and an answer
/// streamed in chunks must not grow in memory without end.
const MAX_SAID_TEXT: usize = 64 * 1024;
/// Most data parts and links kept, as a note carries at most this many parts.
const MAX_SAID_PARTS: usize = 16;
/// Artifacts a stream remembers at once, for chunks of several that interleave.
const MAX_SAID_ARTIFACTS: usize = 8;

/// What one artifact says: its inline text parts as written, one after another (an
/// answer streamed in chunks is several parts with nothing between them), whether some
/// of its text was too large to come inline (stored instead), and its data and links.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Said {
    pub id: String,
    pub name: Option<String>,
    pub text: String,
    /// Some of its text is not in `text`: stored (too large to come inline) or past
    /// `MAX_SAID_TEXT`.
    pub stored: bool,
    pub parts: Vec<Part>,
}

impl Said {
    pub fn of(artifact: &Artifact) -> Self {
        let mut said = Self {
            id: artifact.id.clone(),
            name: artifact.name.clone(),
            ..Self::default()
        };
        said.add(&artifact.parts);
        said
    }

    fn add(&mut self, parts: &[Part]) {
        for part in parts {
            match &part.content {
                Content::Text(piece) => {
                    let room = MAX_SAID_TEXT.saturating_sub(self.text.len());
                    let mut end = piece.len().min(room);
                    while !piece.is_char_boundary(end) {
                        end -= 1;
                    }
                    self.text.push_str(&piece[..end]);
                    self.stored |= end < piece.len();
                }
                Content::Stored {
                    kind: ContentKind::Text,
                    ..
                } => self.stored = true,
                Content::Data(_) | Content::Url(_) if self.parts.len() < MAX_SAID_PARTS => {
                    self.parts.push(part.clone());
                }
                _ => {}
            }
        }
    }

    /// The words an end takes from this artifact: its text, saying so when some of it
    /// is only in the artifact (never a part of an answer told as if it were whole).
    fn words(&self) -> Option<String> {
        let text = self.text.trim();
        let label = self.name.as_deref().unwrap_or(&self.id);
        match (text.is_empty(), self.stored) {
            (false, false) => Some(text.to_owned()),
            (false, true) => Some(format!("{text} (the rest is in the artifact {label:?})")),
            (true, true) => Some(format!(
                "(the answer is the artifact {label:?}, too long for a note)"
            )),
            (true, false) => None,
        }
    }
}

/// The artifacts a stream gave, the latest last, each with its chunks appended.
#[derive(Debug, Default)]
pub struct Heard(Vec<Said>);

impl Heard {
    /// A whole task's artifacts replace what was heard.
    pub fn task(&mut self, artifacts: &[Artifact]) {
        let skip = artifacts.len().saturating_sub(MAX_SAID_ARTIFACTS);
        self.0 = artifacts.iter().skip(skip).map(Said::of).collect();
    }

    pub fn update(&mut self, update: &ArtifactUpdate) {
        let id = &update.artifact.id;
        let earlier = self
            .0
            .iter()
            .position(|s| &s.id == id)
            .map(|at| self.0.remove(at));
        let said = match earlier {
            Some(mut said) if update.append => {
                said.add(&update.artifact.parts);
                said
            }
            Some(earlier) => {
                let mut whole = Said::of(&update.artifact);
                // A whole artifact too large to come inline after its chunks did (as
                // Pydantic AI sends it) keeps the words its chunks said.
                if whole.text.is_empty() && whole.stored && !earlier.text.is_empty() {
                    whole.text = earlier.text;
                    whole.stored = false;
                }
                whole
            }
            None => Said::of(&update.artifact),
        };
        if self.0.len() == MAX_SAID_ARTIFACTS {
            self.0.remove(0);
        }
        self.0.push(said);
    }

    pub fn last(&self) -> Option<&Said> {
        self.0.last()
    }
}

/// A status with no message of its own is said by the last artifact: an end takes its
/// words, a question its data and links (its words stay the last the agent said as
/// status, so an earlier draft never becomes a question). A status message that says
/// anything always wins, and progress never borrows an artifact (it is told as one).
pub fn speak_for(status: &mut Status, last: Option<&Said>) {
    // A question's blank message is no message: its words stay the last it said.
    if status.state.is_interrupted() && status.text.as_deref().is_some_and(|t| t.trim().is_empty())
    {
        status.text = None;
    }
    let Some(last) = last else { return };
    let says_something =
        status.text.as_deref().is_some_and(|t| !t.trim().is_empty()) || !status.parts.is_empty();
    if says_something {
        return;
    }
    match status.state {
        TaskState::Completed => {
            if let Some(words) = last.words() {
                status.text = Some(words);
            }
        }
        state if state.is_interrupted() => status.parts = last.parts.clone(),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn text(t: &str) -> Part {
        Part {
            media_type: None,
            filename: None,
            content: Content::Text(t.into()),
        }
    }

    fn stored() -> Part {
        Part {
            media_type: None,
            filename: None,
            content: Content::Stored {
                spill: "s1".into(),
                kind: ContentKind::Text,
            },
        }
    }

    fn chunk(id: &str, parts: Vec<Part>, append: bool) -> ArtifactUpdate {
        ArtifactUpdate {
            artifact: Artifact {
                id: id.into(),
                name: Some("result".into()),
                parts,
                ..Artifact::default()
            },
            append,
            last_chunk: false,
        }
    }

    fn completed() -> Status {
        Status::new("t", TaskState::Completed, None)
    }

    #[test]
    fn chunks_append_by_id_even_when_artifacts_interleave() {
        let mut heard = Heard::default();
        heard.update(&chunk("a", vec![text("Hel")], true));
        heard.update(&chunk("b", vec![text("other")], false));
        heard.update(&chunk("a", vec![text("lo")], true));
        assert_eq!(heard.last().unwrap().text, "Hello");
    }

    #[test]
    fn a_ninth_artifact_forgets_the_first_and_text_stops_at_its_bound() {
        let mut heard = Heard::default();
        for i in 0..9 {
            heard.update(&chunk(&format!("a{i}"), vec![text("x")], false));
        }
        heard.update(&chunk("a0", vec![text("y")], true));
        assert_eq!(
            heard.last().unwrap().text,
            "y",
            "a0 was forgotten: starts anew"
        );
        // One byte first, so the bound falls inside an "é": the cut steps back to it.
        let mut long = Said::default();
        long.add(&[text("x"), text(&"é".repeat(MAX_SAID_TEXT))]);
        assert!(long.text.len() < MAX_SAID_TEXT && long.text.ends_with('é'));
        assert!(long.stored, "the rest is said to be in the artifact");
    }

    #[test]
    fn a_whole_artifact_stored_after_its_chunks_keeps_their_words() {
        let mut heard = Heard::default();
        heard.update(&chunk("a", vec![text("The answer ")], true));
        heard.update(&chunk("a", vec![text("is 42.")], true));
        heard.update(&chunk("a", vec![stored()], false));
        let mut status = completed();
        speak_for(&mut status, heard.last());
        assert_eq!(status.text.as_deref(), Some("The answer is 42."));
    }

    /// The text an end takes from an artifact of `parts`.
    fn end_said_by(parts: Vec<Part>) -> Option<String> {
        let mut status = completed();
        speak_for(
            &mut status,
            Some(&Said::of(&chunk("a", parts, false).artifact)),
        );
        status.text
    }

    #[test]
    fn words_with_a_stored_middle_say_the_rest_is_in_the_artifact() {
        assert_eq!(
            end_said_by(vec![text("Part one."), stored(), text("Part three.")]).as_deref(),
            Some("Part one.Part three. (the rest is in the artifact \"result\")")
        );
    }

    #[test]
    fn an_answer_too_long_to_come_inline_says_where_it_is() {
        assert_eq!(
            end_said_by(vec![stored()]).as_deref(),
            Some("(the answer is the artifact \"result\", too long for a note)")
        );
    }

    #[test]
    fn an_empty_status_message_is_no_message_and_a_question_takes_no_words() {
        let said = Said::of(&chunk("a", vec![text("An earlier draft")], false).artifact);
        let mut status = completed();
        status.text = Some(String::new());
        speak_for(&mut status, Some(&said));
        assert_eq!(status.text.as_deref(), Some("An earlier draft"));
        let mut blank = Status::new("t", TaskState::InputRequired, Some(" "));
        speak_for(&mut blank, None);
        assert_eq!(
            blank.text, None,
            "a blank question keeps the words it said as status"
        );
        let mut asked = Status::new("t", TaskState::AuthRequired, Some(""));
        speak_for(&mut asked, Some(&said));
        assert_eq!(
            asked.text, None,
            "a question keeps the words it said as status"
        );
        let mut working = Status::new("t", TaskState::Working, None);
        speak_for(&mut working, Some(&said));
        assert_eq!(working.text, None);
    }
}

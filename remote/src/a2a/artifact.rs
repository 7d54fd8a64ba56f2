//! A task's artifacts as the model's: each part's content inline when it came inline,
//! or the spill that stored it (see `divert`).

use super::divert::{SpillNames, decode_base64};
use super::types;
use crate::model::{Artifact, ArtifactUpdate, Content, ContentKind, Part};

/// Most of an artifact's words kept to speak for a status: a note's text is bounded
/// further on, and an answer streamed in chunks must not grow in memory without end.
const MAX_SAID_TEXT: usize = 64 * 1024;
/// Most data parts and links kept, as a note carries at most this many parts.
const MAX_SAID_PARTS: usize = 16;
/// Artifacts a stream remembers at once, for chunks of several that interleave.
const MAX_SAID_ARTIFACTS: usize = 8;

/// What an artifact says, kept to speak for a status with no message of its own
/// (`map::speak_for`): its inline text parts as written, one after another (an answer
/// streamed in chunks is several parts with nothing between them), and its data and
/// links.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Said {
    pub id: String,
    pub text: String,
    pub parts: Vec<Part>,
}

impl Said {
    pub fn of(artifact: &Artifact) -> Self {
        let mut said = Self {
            id: artifact.id.clone(),
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
                }
                Content::Data(_) | Content::Url(_) if self.parts.len() < MAX_SAID_PARTS => {
                    self.parts.push(part.clone());
                }
                _ => {}
            }
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
            _ => Said::of(&update.artifact),
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

pub fn artifacts(wire: &[types::Artifact], names: &SpillNames) -> Vec<Artifact> {
    wire.iter().map(|a| artifact(a, names)).collect()
}

pub fn update(wire: &types::TaskArtifactUpdateEvent, names: &SpillNames) -> ArtifactUpdate {
    ArtifactUpdate {
        artifact: artifact(&wire.artifact, names),
        append: wire.append,
        last_chunk: wire.last_chunk,
    }
}

fn artifact(wire: &types::Artifact, names: &SpillNames) -> Artifact {
    Artifact {
        id: wire.artifact_id.clone(),
        name: wire.name.clone().filter(|n| !n.is_empty()),
        description: wire.description.clone().filter(|d| !d.is_empty()),
        metadata: wire.metadata.as_ref().map(serde_json::Value::to_string),
        parts: wire.parts.iter().map(|p| part(p, Some(names))).collect(),
    }
}

/// A status message's parts other than text: nothing in a message is ever stored, so
/// all of it came inline.
pub fn message_parts(message: Option<&types::Message>) -> Vec<Part> {
    message
        .map(|m| {
            m.parts
                .iter()
                .filter(|p| p.text.is_none())
                .map(|p| part(p, None))
                .collect()
        })
        .unwrap_or_default()
}

fn part(wire: &types::WirePart, names: Option<&SpillNames>) -> Part {
    Part {
        media_type: wire.media_type.clone().filter(|m| !m.is_empty()),
        filename: wire.filename.clone().filter(|f| !f.is_empty()),
        content: content(wire, names),
    }
}

fn content(wire: &types::WirePart, names: Option<&SpillNames>) -> Content {
    let stored = |value: &str, kind| {
        names?.spill_in(value).map(|spill| Content::Stored {
            spill: spill.to_owned(),
            kind,
        })
    };
    if let Some(text) = &wire.text {
        return stored(text, ContentKind::Text).unwrap_or_else(|| Content::Text(text.clone()));
    }
    if let Some(raw) = &wire.raw {
        return stored(raw, ContentKind::File).unwrap_or_else(|| inline_bytes(raw));
    }
    if let Some(data) = &wire.data {
        return data
            .as_str()
            .and_then(|s| stored(s, ContentKind::Data))
            .unwrap_or_else(|| Content::Data(data.to_string()));
    }
    match &wire.url {
        Some(url) => Content::Url(url.clone()),
        None => Content::Unreadable("a part with no text, data, bytes or URL".into()),
    }
}

/// Bytes that came inline (small), decoded as leniently as stored ones are.
fn inline_bytes(raw: &str) -> Content {
    match decode_base64(raw) {
        Some(bytes) => Content::Bytes(bytes),
        None => Content::Unreadable("a file part whose bytes are not base64".into()),
    }
}

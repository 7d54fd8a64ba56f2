//! A task's artifacts as the model's: each part's content inline when it came inline,
//! or the spill that stored it (see `divert`).

use super::divert::{SpillNames, decode_base64};
use super::types;
use crate::model::{Artifact, ArtifactUpdate, Content, ContentKind, Part};

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

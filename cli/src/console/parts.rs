//! An artifact's parts: previewed on its page (text and JSON shown, images drawn) and
//! downloaded through the console. A part is the agent's content, so it is never served
//! as anything a browser runs: only the image types below are shown inline; everything
//! else goes as an attachment, sandboxed.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use standin_wire::{PartKind, PartView};

use super::Console;
use super::respond::failed;
use super::views::{self, ArtifactPage, PartPreview};
use crate::CliError;

/// The media types drawn inline: raster images only (an SVG can carry script).
const SHOWN_INLINE: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// The most of a stored text part the page reads to show it.
const PREVIEW_BYTES: u64 = 256 * 1024;

pub(crate) async fn preview(
    console: &Console,
    id: &str,
    artifact_id: &str,
) -> Result<ArtifactPage, CliError> {
    let content = console.control.artifact(id, artifact_id).await?;
    let artifact = &content.artifact;
    let href = |index: usize| {
        format!(
            "/standins/{}/artifacts/{}/parts/{index}",
            views::segment(id),
            views::segment(artifact_id)
        )
    };
    let mut parts = Vec::with_capacity(artifact.parts.len());
    for (index, part) in artifact.parts.iter().enumerate() {
        let link = content.links.get(index).cloned().flatten();
        let mut preview = PartPreview {
            label: format!("Part {}: {}", index + 1, views::describe(part)),
            text: inline_text(part),
            image: None,
            download: link.as_ref().map(|_| format!("{}?download=1", href(index))),
        };
        match (&link, essence(part)) {
            (Some(_), Some(media)) if SHOWN_INLINE.contains(&media.as_str()) => {
                preview.image = Some(href(index));
            }
            (Some(link), Some(media))
                if is_text(&media) && part.size.unwrap_or(0) <= PREVIEW_BYTES =>
            {
                // A part that does not read is said on its own; the others still show.
                preview.text = Some(match console.control.download(link).await {
                    Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    Err(err) => format!("(this part did not read: {err})"),
                });
            }
            _ => {}
        }
        parts.push(preview);
    }
    Ok(ArtifactPage {
        stack: console.stack.clone(),
        id: id.to_owned(),
        back: format!("/standins/{}", views::segment(id)),
        name: artifact
            .name
            .clone()
            .unwrap_or_else(|| artifact.artifact_id.clone()),
        description: artifact.description.clone().unwrap_or_default(),
        parts,
    })
}

/// What the artifact's record carries itself: a short text, data, a link.
fn inline_text(part: &PartView) -> Option<String> {
    match part.kind {
        PartKind::Data => part.data.as_ref().map(views::pretty),
        PartKind::Url => part.url.clone(),
        _ => part.text.clone(),
    }
}

fn essence(part: &PartView) -> Option<String> {
    let media = part.media_type.as_deref()?;
    Some(media.split(';').next()?.trim().to_ascii_lowercase())
}

fn is_text(media: &str) -> bool {
    media.starts_with("text/") || media == "application/json" || media.ends_with("+json")
}

#[derive(Deserialize)]
pub(crate) struct PartQuery {
    #[serde(default)]
    download: Option<String>,
}

/// A stored part's bytes, read through a fresh link (links last minutes).
pub(crate) async fn part(
    State(console): State<Arc<Console>>,
    Path((id, artifact_id, index)): Path<(String, String, usize)>,
    Query(query): Query<PartQuery>,
) -> Response {
    let read = async {
        let content = console.control.artifact(&id, &artifact_id).await?;
        let part = content.artifact.parts.get(index).cloned();
        let link = content.links.get(index).cloned().flatten();
        match (part, link) {
            (Some(part), Some(link)) => Ok(Some((part, console.control.download(&link).await?))),
            _ => Ok(None),
        }
    };
    let (part, bytes) = match read.await {
        Ok(Some(found)) => found,
        Ok(None) => return (StatusCode::NOT_FOUND, "no stored part there").into_response(),
        Err(err) => return failed(&console, "This part did not read", &err),
    };
    let inline = query.download.is_none()
        && essence(&part).is_some_and(|media| SHOWN_INLINE.contains(&media.as_str()));
    let (media, disposition) = match inline {
        true => (essence(&part).unwrap_or_default(), "inline".to_owned()),
        false => (
            "application/octet-stream".to_owned(),
            format!(
                "attachment; filename=\"{}\"",
                crate::artifacts::safe_name(part.filename.as_deref().unwrap_or("part"))
            ),
        ),
    };
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, media),
        (header::CONTENT_DISPOSITION, disposition),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; sandbox".to_owned(),
        ),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    response
}

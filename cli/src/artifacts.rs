//! `standin artifacts`: what a sub-task produced, listed, or written to files with each
//! part's SHA-256 checked against the one the stand-in recorded.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use standin_wire::{ArtifactView, PartKind, PartView};

use crate::control::ControlClient;
use crate::error::CliError;
use crate::media::extension_of;

/// One line per artifact: id, name, whether whole, and its parts.
pub fn human_line(artifact: &ArtifactView) -> String {
    let parts: Vec<String> = artifact.parts.iter().map(describe).collect();
    format!(
        "{}  {}  {}{}  {}",
        artifact.artifact_id,
        artifact.name.as_deref().unwrap_or("-"),
        if artifact.complete {
            "complete"
        } else {
            "in progress"
        },
        if artifact.truncated {
            " (truncated)"
        } else {
            ""
        },
        parts.join(", ")
    )
}

fn describe(part: &PartView) -> String {
    let kind = match part.kind {
        PartKind::Text => "text",
        PartKind::Data => "data",
        PartKind::File => "file",
        PartKind::Url => "url",
    };
    let mut line = match (&part.url, part.size) {
        (Some(url), _) => format!("{kind} {url}"),
        (None, Some(size)) => format!("{kind} {size} bytes"),
        (None, None) => kind.to_owned(),
    };
    if let Some(media) = &part.media_type {
        line.push_str(&format!(" {media}"));
    }
    if let Some(flag) = part.flag {
        line.push_str(&format!(
            " [{}]",
            serde_json::to_value(flag)
                .unwrap_or_default()
                .as_str()
                .unwrap_or("")
        ));
    }
    line
}

/// A name from an agent, safe as one file name: no separators, no `..`, no control
/// characters, not empty.
/// The rule `examples/parent.py` follows too: ASCII letters, digits, `.`, `_` and `-`
/// kept, anything else `_`, leading dots dropped, then at most 100 characters.
pub fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned: String = cleaned.trim_start_matches('.').chars().take(100).collect();
    if cleaned.is_empty() {
        "part".to_owned()
    } else {
        cleaned
    }
}

/// Where part `index` of an artifact is written: `ARTIFACT_ID/N-NAME`, NAME the part's
/// file name, else the artifact's name (given its media type's extension when it has
/// none: `report` of text/markdown is `report.md`), else `part` with its kind's extension
/// (the rule docs/artifacts.md states, and `examples/parent.py` follows).
pub fn part_path(out: &Path, artifact: &ArtifactView, index: usize, part: &PartView) -> PathBuf {
    let fallback = match part.kind {
        PartKind::Text => "part.txt",
        PartKind::Data => "part.json",
        PartKind::File | PartKind::Url => "part.bin",
    };
    let given = |name: &Option<String>| name.clone().filter(|name| !name.is_empty());
    let name = match (given(&part.filename), given(&artifact.name)) {
        (Some(own), _) => own,
        (None, Some(artifact)) => with_extension(&artifact, part),
        (None, None) => fallback.to_owned(),
    };
    out.join(directory_name(&artifact.artifact_id))
        .join(format!("{index}-{}", safe_name(&name)))
}

/// `name`, with the extension of the part's media type (or kind) when it has none.
fn with_extension(name: &str, part: &PartView) -> String {
    if name.contains('.') {
        return name.to_owned();
    }
    let by_kind = match part.kind {
        PartKind::Text => Some("txt"),
        PartKind::Data => Some("json"),
        PartKind::File | PartKind::Url => None,
    };
    match part
        .media_type
        .as_deref()
        .and_then(extension_of)
        .or(by_kind)
    {
        Some(extension) => format!("{name}.{extension}"),
        None => name.to_owned(),
    }
}

/// An artifact's directory: its id made safe, and when that changed it, a digest of the
/// id, so `a/b` and `a_b` do not share one.
fn directory_name(id: &str) -> String {
    let safe = safe_name(id);
    if safe == id {
        return safe;
    }
    format!(
        "{safe}-{}",
        &hex::encode(Sha256::digest(id.as_bytes()))[..8]
    )
}

/// Writes every stored part of the stand-in's artifacts under `out`; returns the files
/// written. A part whose bytes do not match their SHA-256 is an error, and not kept.
pub async fn save(control: &ControlClient, id: &str, out: &Path) -> Result<Vec<PathBuf>, CliError> {
    let page = control.artifacts(id).await?;
    let mut written = Vec::new();
    for listed in &page.artifacts {
        let content = control.artifact(id, &listed.artifact_id).await?;
        for (index, part) in content.artifact.parts.iter().enumerate() {
            let link = content.links.get(index).cloned().flatten();
            let bytes = match (link, &part.text, &part.data) {
                (Some(link), _, _) => control.download(&link).await?,
                (None, Some(text), _) => text.clone().into_bytes(),
                (None, None, Some(data)) => data.to_string().into_bytes(),
                (None, None, None) => continue,
            };
            if let Some(expected) = &part.sha256
                && hex::encode(Sha256::digest(&bytes)) != *expected
            {
                return Err(CliError::Api {
                    status: 200,
                    detail: format!(
                        "part {index} of artifact {:?} does not match its SHA-256; not written",
                        listed.artifact_id
                    ),
                });
            }
            let path = part_path(out, &content.artifact, index, part);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| CliError::Input {
                    path: dir.display().to_string(),
                    detail: e.to_string(),
                })?;
            }
            std::fs::write(&path, &bytes).map_err(|e| CliError::Input {
                path: path.display().to_string(),
                detail: e.to_string(),
            })?;
            if let Some(flag) = part.flag {
                let flag = serde_json::to_value(flag).unwrap_or_default();
                eprintln!(
                    "standin: {} is not the whole part ({})",
                    path.display(),
                    flag.as_str().unwrap_or_default()
                );
            }
            written.push(path);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_s_names_cannot_leave_the_directory() {
        for (name, safe) in [
            ("../../etc/passwd", "_.._etc_passwd"),
            ("report.md", "report.md"),
            ("", "part"),
            ("..", "part"),
            ("a/b\\c\u{0}d", "a_b_c_d"),
            ("résumé.md", "r_sum_.md"),
        ] {
            assert_eq!(safe_name(name), safe, "{name:?}");
        }
        assert_ne!(directory_name("a/b"), directory_name("a_b"));
        assert_eq!(directory_name("report"), "report");
    }

    #[test]
    fn a_part_is_named_by_its_file_name_then_its_artifacts_then_its_kind() {
        let artifact: ArtifactView = serde_json::from_value(serde_json::json!({
            "artifact_id": "a-1", "name": "report.md", "complete": true,
            "parts": [{"kind": "text", "size": 3}]
        }))
        .expect("an artifact");
        let mut part = artifact.parts[0].clone();
        let at = |part: &PartView, artifact: &ArtifactView| {
            part_path(Path::new("out"), artifact, 0, part)
        };
        assert_eq!(at(&part, &artifact), Path::new("out/a-1/0-report.md"));
        part.filename = Some("draft.md".into());
        assert_eq!(at(&part, &artifact), Path::new("out/a-1/0-draft.md"));
        let unnamed = ArtifactView {
            name: None,
            ..artifact.clone()
        };
        assert_eq!(
            at(&artifact.parts[0], &unnamed),
            Path::new("out/a-1/0-part.txt")
        );
        // An artifact's name without an extension takes the part's media type's.
        let report = ArtifactView {
            name: Some("report".into()),
            ..artifact.clone()
        };
        let mut markdown = artifact.parts[0].clone();
        markdown.media_type = Some("text/markdown; charset=utf-8".into());
        assert_eq!(at(&markdown, &report), Path::new("out/a-1/0-report.md"));
        let mut blob = markdown.clone();
        (blob.kind, blob.media_type) = (PartKind::File, Some("application/x-unknown".into()));
        assert_eq!(at(&blob, &report), Path::new("out/a-1/0-report"));
        blob.kind = PartKind::Data;
        assert_eq!(at(&blob, &report), Path::new("out/a-1/0-report.json"));
    }
}

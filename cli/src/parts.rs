//! `--file` and `--data` as the parts a start or a reply carries: a local file's bytes
//! (named, its media type read from its extension; inline when small, else put through
//! an upload first), an `https` link the agent fetches, or a JSON object.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use standin_wire::{FileContent, InputFile, InputPart, MAX_TURN_BYTES, MAX_UPLOAD_BYTES};

use crate::media::media_type_of;
use crate::{CliError, ControlClient};

/// A part as the flags give it: ready to send, or a local file too large to go inline,
/// to be put through an upload first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GivenPart {
    Ready(InputPart),
    Upload {
        name: Option<String>,
        media_type: String,
        bytes: Vec<u8>,
    },
}

/// The parts for `--file` (each a path or an https link) and `--data` (each a JSON
/// object), files first.
pub fn parts_of(files: &[String], data: &[String]) -> Result<Vec<GivenPart>, CliError> {
    let mut parts = Vec::new();
    for file in files {
        parts.push(file_part(file)?);
    }
    for json in data {
        let invalid = |problem: String| CliError::Invalid {
            field: "--data".into(),
            problem,
        };
        match serde_json::from_str(json) {
            Ok(serde_json::Value::Object(data)) => {
                parts.push(GivenPart::Ready(InputPart::Data { data }));
            }
            Ok(other) => return Err(invalid(format!("must be a JSON object, got {other}"))),
            Err(err) => return Err(invalid(format!("is not JSON: {err}"))),
        }
    }
    Ok(parts)
}

impl ControlClient {
    /// The parts to send: each large file put through an upload first.
    pub async fn ready(&self, given: Vec<GivenPart>) -> Result<Vec<InputPart>, CliError> {
        let mut parts = Vec::with_capacity(given.len());
        for part in given {
            parts.push(match part {
                GivenPart::Ready(part) => part,
                GivenPart::Upload {
                    name,
                    media_type,
                    bytes,
                } => {
                    let id = self.upload(bytes, Some(&media_type)).await?;
                    InputPart::File(InputFile {
                        name,
                        media_type: Some(media_type),
                        content: FileContent::Upload(id),
                    })
                }
            });
        }
        Ok(parts)
    }
}

fn file_part(file: &str) -> Result<GivenPart, CliError> {
    if file.starts_with("https://") {
        let name = file
            .rsplit('/')
            .next()
            .filter(|name| !name.is_empty() && !name.contains(['?', '#']))
            .map(str::to_owned);
        return Ok(GivenPart::Ready(InputPart::File(InputFile {
            media_type: name.as_deref().and_then(media_type_of),
            name,
            content: FileContent::Url(file.to_owned()),
        })));
    }
    let path = Path::new(file);
    let too_large = |size: u64| CliError::Invalid {
        field: "--file".into(),
        problem: format!(
            "{file} is {size} bytes; an upload holds at most {MAX_UPLOAD_BYTES}: put it where the agent can fetch it and pass its https:// link"
        ),
    };
    let unreadable = |err: std::io::Error| CliError::Input {
        path: file.to_owned(),
        detail: err.to_string(),
    };
    let size = std::fs::metadata(path).map_err(unreadable)?.len();
    if size > MAX_UPLOAD_BYTES {
        return Err(too_large(size));
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .map(str::to_owned);
    let media_type = name
        .as_deref()
        .and_then(media_type_of)
        .unwrap_or_else(|| "application/octet-stream".into());
    // Base64 grows a file by a third; the turn's text and JSON need some room too.
    let inline_most = MAX_TURN_BYTES / 4 * 3 - 1024;
    if bytes.len() > inline_most {
        return Ok(GivenPart::Upload {
            name,
            media_type,
            bytes,
        });
    }
    Ok(GivenPart::Ready(InputPart::File(InputFile {
        media_type: Some(media_type),
        name,
        content: FileContent::Bytes(STANDARD.encode(bytes)),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_data_become_parts_and_bad_ones_name_their_flag() {
        let dir = std::env::temp_dir().join(format!("standin-parts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let csv = dir.join("rows.csv");
        std::fs::write(&csv, "a,b\n1,2\n").expect("write");
        let parts = parts_of(
            &[
                csv.display().to_string(),
                "https://x.test/contract.pdf".into(),
            ],
            &[r#"{"rows": 2}"#.into()],
        )
        .expect("parts");
        assert_eq!(
            parts[0],
            GivenPart::Ready(InputPart::File(InputFile {
                name: Some("rows.csv".into()),
                media_type: Some("text/csv".into()),
                content: FileContent::Bytes(STANDARD.encode("a,b\n1,2\n")),
            }))
        );
        assert!(
            matches!(&parts[1], GivenPart::Ready(InputPart::File(InputFile { name: Some(name), content: FileContent::Url(_), .. })) if name == "contract.pdf")
        );
        assert!(
            matches!(&parts[2], GivenPart::Ready(InputPart::Data { data }) if data["rows"] == 2)
        );

        // Too large to go inline: put through an upload.
        let big = dir.join("big.bin");
        std::fs::write(&big, vec![7u8; MAX_TURN_BYTES]).expect("write");
        let staged = parts_of(&[big.display().to_string()], &[]).expect("parts");
        assert_eq!(
            staged,
            [GivenPart::Upload {
                name: Some("big.bin".into()),
                media_type: "application/octet-stream".into(),
                bytes: vec![7u8; MAX_TURN_BYTES],
            }]
        );
        for (files, data, says) in [
            (
                vec![dir.join("absent").display().to_string()],
                vec![],
                "cannot read",
            ),
            (
                vec![],
                vec!["[1]".to_owned()],
                "--data: must be a JSON object",
            ),
            (vec![], vec!["{".to_owned()], "--data: is not JSON"),
        ] {
            let err = parts_of(&files, &data).expect_err("refused").to_string();
            assert!(err.starts_with(says), "{err}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}

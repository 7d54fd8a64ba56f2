//! `--file` and `--data` as the parts a start or a reply carries: a local file's bytes
//! (named, its media type read from its extension), an `https` link the agent fetches,
//! or a JSON object.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use standin_wire::{FileContent, InputFile, InputPart, MAX_TURN_BYTES};

use crate::CliError;
use crate::media::media_type_of;

/// The parts for `--file` (each a path or an https link) and `--data` (each a JSON
/// object), files first.
pub fn parts_of(files: &[String], data: &[String]) -> Result<Vec<InputPart>, CliError> {
    let mut parts = Vec::new();
    for file in files {
        parts.push(InputPart::File(file_part(file)?));
    }
    for json in data {
        let invalid = |problem: String| CliError::Invalid {
            field: "--data".into(),
            problem,
        };
        match serde_json::from_str(json) {
            Ok(serde_json::Value::Object(data)) => parts.push(InputPart::Data { data }),
            Ok(other) => return Err(invalid(format!("must be a JSON object, got {other}"))),
            Err(err) => return Err(invalid(format!("is not JSON: {err}"))),
        }
    }
    Ok(parts)
}

fn file_part(file: &str) -> Result<InputFile, CliError> {
    if file.starts_with("https://") {
        let name = file
            .rsplit('/')
            .next()
            .filter(|name| !name.is_empty() && !name.contains(['?', '#']))
            .map(str::to_owned);
        return Ok(InputFile {
            media_type: name.as_deref().and_then(media_type_of),
            name,
            content: FileContent::Url(file.to_owned()),
        });
    }
    let path = Path::new(file);
    let bytes = std::fs::read(path).map_err(|err| CliError::Input {
        path: file.to_owned(),
        detail: err.to_string(),
    })?;
    // Base64 grows a file by a third; the turn's text and JSON need some room too.
    let most = MAX_TURN_BYTES / 4 * 3 - 1024;
    if bytes.len() > most {
        return Err(CliError::Invalid {
            field: "--file".into(),
            problem: format!(
                "{file} is {} bytes; a turn carries at most about {most} bytes of files inline: put it where the agent can fetch it and pass its https:// link",
                bytes.len()
            ),
        });
    }
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .map(str::to_owned);
    Ok(InputFile {
        media_type: Some(
            name.as_deref()
                .and_then(media_type_of)
                .unwrap_or_else(|| "application/octet-stream".into()),
        ),
        name,
        content: FileContent::Bytes(STANDARD.encode(bytes)),
    })
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
            InputPart::File(InputFile {
                name: Some("rows.csv".into()),
                media_type: Some("text/csv".into()),
                content: FileContent::Bytes(STANDARD.encode("a,b\n1,2\n")),
            })
        );
        assert!(
            matches!(&parts[1], InputPart::File(InputFile { name: Some(name), content: FileContent::Url(_), .. }) if name == "contract.pdf")
        );
        assert!(matches!(&parts[2], InputPart::Data { data } if data["rows"] == 2));

        let big = dir.join("big.bin");
        std::fs::write(&big, vec![0u8; MAX_TURN_BYTES]).expect("write");
        for (files, data, says) in [
            (vec![big.display().to_string()], vec![], "--file: "),
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

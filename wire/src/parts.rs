//! What a parent hands the agent beside its text, on a start or a reply: more text, data
//! (a JSON object), or a file, given as an `https` link the agent fetches itself or as
//! its bytes. The turn is bounded as a whole (its text and its parts, as JSON), so a
//! start fits an execution's input and eight queued replies fit the stand-in's row.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::body_error::{BodyError, field_refused};

/// The most parts one turn carries beside its text.
pub const MAX_PARTS: usize = 16;
/// The most a turn's text and its parts take together, as JSON (a file's bytes in
/// base64): larger files go as a link.
pub const MAX_TURN_BYTES: usize = 32 * 1024;
/// The longest file name and media type.
const MAX_NAME_BYTES: usize = 255;

/// One part a parent gives the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InputPart {
    Text {
        text: String,
    },
    /// A JSON object: the form both A2A versions carry as a data part.
    Data {
        data: Map<String, Value>,
    },
    File(InputFile),
}

impl InputPart {
    /// Whether it names a file put through `POST /uploads`.
    pub fn is_upload(&self) -> bool {
        matches!(
            self,
            Self::File(InputFile {
                content: FileContent::Upload(_),
                ..
            })
        )
    }
}

/// A file: its name and media type, and where the agent reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(flatten)]
    pub content: FileContent,
}

/// Where a file's content is: exactly one of a link, the bytes, or an upload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileContent {
    /// An `https` link the agent fetches itself.
    Url(String),
    /// The bytes, in standard base64.
    Bytes(String),
    /// A file put through `POST /uploads`: the agent gets a link that reads it, or its
    /// bytes.
    #[serde(rename = "upload_id")]
    Upload(crate::upload::UploadId),
}

/// Reads `parts` (absent: none) and checks the turn, `text` with them, against its bound.
/// Every refusal names the field: `parts[2].url: …`.
pub fn parse_parts(body: &Value, text: &str) -> Result<Vec<InputPart>, BodyError> {
    let parts = match body.get("parts") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(parts)) => parts,
        Some(other) => {
            return Err(field_refused(
                "parts",
                format!("must be a list of parts, got {other}"),
            ));
        }
    };
    if parts.len() > MAX_PARTS {
        return Err(field_refused(
            "parts",
            format!("must hold at most {MAX_PARTS} parts, got {}", parts.len()),
        ));
    }
    let parts = parts
        .iter()
        .enumerate()
        .map(|(i, part)| parse_part(&format!("parts[{i}]"), part))
        .collect::<Result<Vec<_>, _>>()?;
    if parts.is_empty() {
        return Ok(parts);
    }
    let size = text.len() + serde_json::to_string(&parts).map_or(0, |json| json.len());
    if size > MAX_TURN_BYTES {
        return Err(field_refused(
            "parts",
            format!(
                "the text and its parts must be at most {MAX_TURN_BYTES} bytes together as JSON, got {size}; give a larger file as an https url the agent fetches"
            ),
        ));
    }
    Ok(parts)
}

fn parse_part(at: &str, part: &Value) -> Result<InputPart, BodyError> {
    let Some(object) = part.as_object() else {
        return Err(field_refused(at, format!("must be an object, got {part}")));
    };
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => Ok(InputPart::Text {
            text: string(at, object, "text")?.ok_or_else(|| required(at, "text"))?,
        }),
        "data" => match object.get("data") {
            Some(Value::Object(data)) => Ok(InputPart::Data { data: data.clone() }),
            None | Some(Value::Null) => Err(required(at, "data")),
            Some(other) => Err(field_refused(
                &format!("{at}.data"),
                format!("must be a JSON object, got {other}"),
            )),
        },
        "file" => parse_file(at, object).map(InputPart::File),
        _ => Err(field_refused(
            &format!("{at}.kind"),
            format!(
                "must be \"text\", \"data\" or \"file\", got {}",
                object.get("kind").unwrap_or(&Value::Null)
            ),
        )),
    }
}

fn parse_file(at: &str, object: &Map<String, Value>) -> Result<InputFile, BodyError> {
    let name = string(at, object, "name")?;
    let media_type = string(at, object, "media_type")?;
    for (field, value) in [("name", &name), ("media_type", &media_type)] {
        if value.as_ref().is_some_and(|v| v.len() > MAX_NAME_BYTES) {
            return Err(field_refused(
                &format!("{at}.{field}"),
                format!("must be at most {MAX_NAME_BYTES} bytes"),
            ));
        }
    }
    if let Some(media_type) = &media_type
        && !media_type
            .split_once('/')
            .is_some_and(|(kind, sub)| !kind.is_empty() && !sub.is_empty())
    {
        return Err(field_refused(
            &format!("{at}.media_type"),
            format!("must be a media type such as text/csv, got {media_type:?}"),
        ));
    }
    let given = (
        string(at, object, "url")?,
        string(at, object, "bytes")?,
        string(at, object, "upload_id")?,
    );
    let content = match given {
        // The link is not echoed: a presigned one carries its signature.
        (Some(url), None, None) => match url::Url::parse(&url) {
            // Written as a link is, not as a lenient parser mends it (`https:x`, spaces);
            // the agent gets the parsed form.
            Ok(parsed)
                if url.starts_with("https://")
                    && !url.chars().any(|c| c.is_whitespace() || c.is_control())
                    && parsed.host_str().is_some_and(|host| !host.is_empty())
                    && parsed.username().is_empty()
                    && parsed.password().is_none() =>
            {
                FileContent::Url(parsed.into())
            }
            _ => {
                return Err(field_refused(
                    &format!("{at}.url"),
                    "must be an https:// link with a host (and no user or password) the agent can fetch",
                ));
            }
        },
        (None, Some(bytes), None) => {
            // Bounded before it is decoded: the turn's bound holds whatever the rest.
            if bytes.len() > MAX_TURN_BYTES {
                return Err(field_refused(
                    &format!("{at}.bytes"),
                    format!(
                        "must be at most {MAX_TURN_BYTES} bytes of base64 with the turn's text; give a larger file as an https url the agent fetches"
                    ),
                ));
            }
            STANDARD.decode(&bytes).map_err(|_| {
                field_refused(
                    &format!("{at}.bytes"),
                    "must be the file's bytes in standard base64, on one line",
                )
            })?;
            FileContent::Bytes(bytes)
        }
        (None, None, Some(id)) => FileContent::Upload(
            crate::upload::UploadId::parse(&id)
                .map_err(|rule| field_refused(&format!("{at}.upload_id"), rule))?,
        ),
        _ => {
            return Err(field_refused(
                at,
                "a file needs exactly one of url (an https link), bytes (base64) or upload_id (from POST /uploads)",
            ));
        }
    };
    Ok(InputFile {
        name,
        media_type,
        content,
    })
}

fn string(at: &str, object: &Map<String, Value>, field: &str) -> Result<Option<String>, BodyError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => {
            Err(field_refused(&format!("{at}.{field}"), "must not be empty"))
        }
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(field_refused(
            &format!("{at}.{field}"),
            format!("must be a string, got {other}"),
        )),
    }
}

fn required(at: &str, field: &str) -> BodyError {
    field_refused(&format!("{at}.{field}"), "is required")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(parts: Value) -> Result<Vec<InputPart>, String> {
        parse_parts(&json!({ "parts": parts }), "hello").map_err(|e| e.0)
    }

    #[test]
    fn each_kind_of_part_is_read() {
        let parts = parse(json!([
            {"kind": "text", "text": "more"},
            {"kind": "data", "data": {"rows": [1, 2]}},
            {"kind": "file", "name": "a.csv", "media_type": "text/csv", "bytes": "YSxiCg=="},
            {"kind": "file", "url": "https://example.com/contract.pdf"},
        ]))
        .expect("valid parts");
        assert_eq!(parts.len(), 4);
        assert_eq!(
            parts[2],
            InputPart::File(InputFile {
                name: Some("a.csv".into()),
                media_type: Some("text/csv".into()),
                content: FileContent::Bytes("YSxiCg==".into()),
            })
        );
        // What is parsed serializes back to what the API takes.
        let again = parse(serde_json::to_value(&parts).expect("json")).expect("round trip");
        assert_eq!(again, parts);
        assert_eq!(parse_parts(&json!({}), "x"), Ok(Vec::new()));
    }

    #[test]
    fn every_refusal_names_its_field() {
        for (parts, field) in [
            (json!("a file"), "parts: must be a list"),
            (json!([{"kind": "image"}]), "parts[0].kind: must be"),
            (json!([{"text": "no kind"}]), "parts[0].kind: must be"),
            (json!([{"kind": "text"}]), "parts[0].text: is required"),
            (
                json!([{"kind": "data", "data": [1]}]),
                "parts[0].data: must be a JSON object",
            ),
            (
                json!([{"kind": "file", "url": "http://x.test/a"}]),
                "parts[0].url: must be an https://",
            ),
            (
                json!([{"kind": "file", "bytes": "not base64!"}]),
                "parts[0].bytes: must be the file's bytes",
            ),
            (
                json!([{"kind": "file"}]),
                "parts[0]: a file needs exactly one",
            ),
            (
                json!([{"kind": "file", "url": "https://x.test/a", "bytes": "YQ=="}]),
                "parts[0]: a file needs exactly one",
            ),
            (
                json!([{"kind": "file", "media_type": "csv", "bytes": "YQ=="}]),
                "parts[0].media_type: must be a media type",
            ),
            (
                json!([{"kind": "file", "name": "", "bytes": "YQ=="}]),
                "parts[0].name: must not be empty",
            ),
        ] {
            let refused = parse(parts.clone()).expect_err("refused");
            assert!(refused.starts_with(field), "{parts}: {refused}");
        }
        // A refused link is not repeated: a presigned one carries its signature.
        let signed = json!([{"kind": "file", "url": "http://x.test/a?X-Amz-Signature=s3cr3t"}]);
        assert!(!parse(signed).expect_err("refused").contains("s3cr3t"));
    }

    #[test]
    fn a_turn_is_bounded_with_its_text_and_in_number() {
        let many = vec![json!({"kind": "text", "text": "x"}); MAX_PARTS + 1];
        assert!(
            parse(json!(many))
                .expect_err("too many")
                .contains("at most 16 parts")
        );
        let bytes = STANDARD.encode(vec![7u8; MAX_TURN_BYTES]);
        let refused = parse(json!([{"kind": "file", "bytes": bytes}])).expect_err("too big");
        assert!(
            refused.starts_with("parts[0].bytes: must be at most"),
            "{refused}"
        );
        let refused = parse(
            json!([{"kind": "file", "bytes": STANDARD.encode(vec![7u8; 20_000])},
            {"kind": "file", "bytes": STANDARD.encode(vec![7u8; 20_000])}]),
        )
        .expect_err("too big together");
        assert!(refused.contains("https url"), "{refused}");
        let text = "t".repeat(MAX_TURN_BYTES - 60);
        let small = json!({"parts": [{"kind": "data", "data": {"a": 1}}]});
        assert!(parse_parts(&small, &text).is_ok());
        let text = "t".repeat(MAX_TURN_BYTES);
        assert!(parse_parts(&small, &text).is_err());
    }
}

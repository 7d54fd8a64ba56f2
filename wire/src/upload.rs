//! `POST /uploads`: a file too large to go inline, put by the parent straight into the
//! stack's bucket through a presigned link, then named in a file part by its
//! `upload_id`. The stand-in gives the agent a link that reads it (or its bytes, for an
//! agent that cannot fetch).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::body_error::{BodyError, field_refused};

/// The largest file one upload holds.
pub const MAX_UPLOAD_BYTES: u64 = 100 * 1024 * 1024;
/// How long the link to put the file lasts, in seconds.
pub const UPLOAD_LINK_SECONDS: u64 = 900;
/// The longest file name and media type.
const MAX_NAME_BYTES: usize = 255;

/// An upload's id: `up-` and 32 lower-case hex digits, made by the API.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct UploadId(String);

impl UploadId {
    pub const RULE: &'static str =
        "must be an upload_id as POST /uploads gave it (up- and 32 lower-case hex digits)";

    pub fn parse(id: &str) -> Result<Self, &'static str> {
        let valid = id.strip_prefix("up-").is_some_and(|hex| {
            hex.len() == 32
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if valid {
            Ok(Self(id.to_owned()))
        } else {
            Err(Self::RULE)
        }
    }

    /// A new id from 16 random bytes.
    pub fn from_random(bytes: [u8; 16]) -> Self {
        Self(format!(
            "up-{}",
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where its bytes are kept in the stack's bucket.
    pub fn key(&self) -> String {
        format!("uploads/{}", self.0)
    }
}

impl TryFrom<String> for UploadId {
    type Error = &'static str;
    fn try_from(id: String) -> Result<Self, Self::Error> {
        Self::parse(&id)
    }
}

impl From<UploadId> for String {
    fn from(id: UploadId) -> Self {
        id.0
    }
}

impl std::fmt::Display for UploadId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `POST /uploads`: the file to come, its size exact (the link takes that many bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRequest {
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl UploadRequest {
    pub fn parse(body: &Value) -> Result<Self, BodyError> {
        let size = match &body["size"] {
            Value::Null => return Err(field_refused("size", "is required (the file's bytes)")),
            value => value
                .as_u64()
                .filter(|size| (1..=MAX_UPLOAD_BYTES).contains(size))
                .ok_or_else(|| {
                    field_refused(
                        "size",
                        format!("must be a whole number of bytes from 1 to {MAX_UPLOAD_BYTES}, got {value}"),
                    )
                })?,
        };
        let media_type = match &body["media_type"] {
            Value::Null => None,
            Value::String(media_type)
                if media_type.len() <= MAX_NAME_BYTES
                    && media_type
                        .split_once('/')
                        .is_some_and(|(kind, sub)| !kind.is_empty() && !sub.is_empty())
                    && media_type
                        .bytes()
                        .all(|b| b.is_ascii_graphic() || b == b' ') =>
            {
                Some(media_type.clone())
            }
            other => {
                return Err(field_refused(
                    "media_type",
                    format!("must be a media type such as application/pdf, got {other}"),
                ));
            }
        };
        Ok(Self { size, media_type })
    }
}

/// The answer to `POST /uploads` (200): PUT the file's bytes to `url` with `headers`
/// before `expires_at`, then name `upload_id` in a file part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadLink {
    pub upload_id: UploadId,
    pub url: String,
    /// The headers the PUT must carry, as signed.
    pub headers: std::collections::BTreeMap<String, String>,
    /// RFC 3339, UTC.
    pub expires_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_upload_id_is_the_api_s_own() {
        let id = UploadId::from_random([0xab; 16]);
        assert_eq!(UploadId::parse(id.as_str()), Ok(id.clone()));
        assert_eq!(id.key(), format!("uploads/{id}"));
        for bad in [
            "",
            "up-",
            "up-ABABABABABABABABABABABABABABABAB",
            "x-abababababababababababababababab",
            "up-abababababababababababababababab/../x",
            "up-ababababababababababababababab0",
        ] {
            assert!(UploadId::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_upload_request_is_read_and_every_refusal_names_its_field() {
        assert_eq!(
            UploadRequest::parse(&json!({"size": 5, "media_type": "application/pdf"})),
            Ok(UploadRequest {
                size: 5,
                media_type: Some("application/pdf".into())
            })
        );
        for (body, field) in [
            (json!({}), "size:"),
            (json!({"size": 0}), "size:"),
            (json!({"size": MAX_UPLOAD_BYTES + 1}), "size:"),
            (json!({"size": "5"}), "size:"),
            (json!({"size": 5, "media_type": "pdf"}), "media_type:"),
            (json!({"size": 5, "media_type": "a/b\nx: y"}), "media_type:"),
        ] {
            let refused = UploadRequest::parse(&body).unwrap_err();
            assert!(refused.0.starts_with(field), "{body}: {refused}");
        }
    }
}

//! A file too large to go inline, put through `POST /uploads` (a presigned link into
//! the stack's bucket) before the start or the reply that names it.

use standin_wire::{UploadId, UploadLink, UploadRequest};

use crate::CliError;

/// How long the PUT of an upload's bytes may take.
const PUT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30 * 60);
use crate::control::{ControlClient, decode, encode, judge};

impl ControlClient {
    /// Puts `bytes` (of `media_type`) through a new upload; its id, for a file part.
    pub async fn upload(
        &self,
        bytes: Vec<u8>,
        media_type: Option<&str>,
    ) -> Result<UploadId, CliError> {
        let request = UploadRequest {
            size: bytes.len() as u64,
            media_type: media_type.map(str::to_owned),
        };
        let answer = self
            .call("POST", "/uploads", Some(&encode(&request)?))
            .await?;
        let link: UploadLink = decode(judge(answer, "")?)?;
        // The API's calls end in 30 s; 100 MiB on a slow line takes longer.
        let mut put = self.http().put(&link.url).timeout(PUT_TIMEOUT).body(bytes);
        for (name, value) in &link.headers {
            put = put.header(name, value);
        }
        let response = put.send().await.map_err(|err| CliError::Api {
            status: 0,
            detail: format!("the file could not be put through its upload link: {err}"),
        })?;
        if !response.status().is_success() {
            let status = response.status().as_u16();
            let said = response.text().await.unwrap_or_default();
            return Err(CliError::Api {
                status,
                detail: format!(
                    "the bucket refused the file put through its upload link: {}",
                    said.chars().take(300).collect::<String>()
                ),
            });
        }
        Ok(link.upload_id)
    }
}

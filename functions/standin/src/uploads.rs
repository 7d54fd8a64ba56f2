//! Files a parent put through `POST /uploads`, handed to the agent at its turn: each
//! becomes a link that reads it for an hour (1.0 `url`, 0.3 `file.uri`), signed when the
//! turn runs, so a reply that waited days still gives a fresh one.

use standin_wire::{FileContent, InputFile, InputPart};

use crate::artifacts::{BlobError, Blobs};

/// How long the agent's link reads an uploaded file.
pub const LINK_SECONDS: u64 = 3600;

/// Why an upload cannot be handed over.
#[derive(Debug, thiserror::Error)]
pub enum HandOverError {
    /// Gone for good (expired with the bucket's retention, or no bucket): the turn ends
    /// the stand-in, saying which part.
    #[error("{0}")]
    Gone(String),
    /// S3 did not answer: the step is tried again.
    #[error(transparent)]
    Unavailable(#[from] BlobError),
}

/// `parts` with each upload given as a link the agent fetches; every other part as it
/// is. Unless `sending` (a turn that will not send them), they are left as they are.
pub async fn hand_over(
    blobs: Option<&dyn Blobs>,
    parts: Vec<InputPart>,
    sending: bool,
) -> Result<Vec<InputPart>, HandOverError> {
    if !sending {
        return Ok(parts);
    }
    let mut handed = Vec::with_capacity(parts.len());
    for (i, part) in parts.into_iter().enumerate() {
        let InputPart::File(InputFile {
            name,
            media_type,
            content: FileContent::Upload(id),
        }) = part
        else {
            handed.push(part);
            continue;
        };
        let at = format!("parts[{i}].upload_id");
        let Some(blobs) = blobs else {
            return Err(HandOverError::Gone(format!(
                "{at}: this deployment keeps no files (no artifacts bucket)"
            )));
        };
        if blobs.size(&id.key()).await?.is_none() {
            return Err(HandOverError::Gone(format!(
                "{at}: the file of {id} is no longer kept (the stack keeps uploads as long as artifacts)"
            )));
        }
        let url = blobs.link(&id.key(), LINK_SECONDS).await?;
        handed.push(InputPart::File(InputFile {
            name,
            media_type,
            content: FileContent::Url(url),
        }));
    }
    Ok(handed)
}

//! Files a parent put through `POST /uploads`, handed to the agent at its turn: each
//! becomes a link that reads it for an hour (1.0 `url`, 0.3 `file.uri`), signed when the
//! turn runs, so a reply that waited days still gives a fresh one; or, for an agent whose
//! entry says it cannot fetch (`file_delivery: "bytes"`), the file itself.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use standin_wire::{FileContent, InputFile, InputPart};

use crate::agents::{FileDelivery, MAX_DELIVERED_BYTES};
use crate::artifacts::{BlobError, Blobs};

pub const LINK_SECONDS: u64 = 3600;

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

/// `parts` with each upload given as `delivery` says (a link the agent fetches, or its
/// bytes); every other part as it is. Unless `sending` (a turn that will not send them),
/// they are left as they are.
pub async fn hand_over(
    blobs: Option<&dyn Blobs>,
    parts: Vec<InputPart>,
    sending: bool,
    delivery: FileDelivery,
) -> Result<Vec<InputPart>, HandOverError> {
    if !sending {
        return Ok(parts);
    }
    let mut handed = Vec::with_capacity(parts.len());
    let mut budget = BytesBudget::default();
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
        let gone = || {
            HandOverError::Gone(format!(
                "{at}: the file of {id} is no longer kept (the stack keeps uploads as long as artifacts)"
            ))
        };
        let size = blobs.size(&id.key()).await?.ok_or_else(gone)?;
        let content = match delivery {
            FileDelivery::Link => FileContent::Url(blobs.link(&id.key(), LINK_SECONDS).await?),
            FileDelivery::Bytes => {
                budget.spend(&at, size).map_err(HandOverError::Gone)?;
                let file = blobs.get(&id.key()).await?.ok_or_else(gone)?;
                FileContent::Bytes(STANDARD.encode(file.bytes))
            }
        };
        handed.push(InputPart::File(InputFile {
            name,
            media_type,
            content,
        }));
    }
    Ok(handed)
}

/// What one message carries of its files as bytes, all of them together, against what an
/// agent that takes files as bytes is given ([`MAX_DELIVERED_BYTES`]): the one rule the
/// API checks a start or a reply by and the turn holds.
#[derive(Debug, Default)]
pub struct BytesBudget {
    spent: u64,
}

impl BytesBudget {
    /// Counts the file at `at`, `size` bytes; the refusal, naming it, when it passes.
    pub fn spend(&mut self, at: &str, size: u64) -> Result<(), String> {
        self.spent += size;
        if self.spent > MAX_DELIVERED_BYTES {
            return Err(format!(
                "{at}: the agent takes files as bytes (its entry's file_delivery), at most {MAX_DELIVERED_BYTES} in one message; with this one the message's files are {} bytes: send fewer or smaller files in this turn",
                self.spent
            ));
        }
        Ok(())
    }
}

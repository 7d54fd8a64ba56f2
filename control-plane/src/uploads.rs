//! `POST /uploads`: a link through which the parent puts a file too large to go inline
//! straight into the stack's bucket, and the check that a part's `upload_id` names a
//! file that was put. The turn hands it to the agent (`standin::uploads`).

use serde_json::Value;
use standin_wire::{
    BodyError, FileContent, InputFile, InputPart, MAX_UPLOAD_BYTES, UPLOAD_LINK_SECONDS, UploadId,
    UploadLink, UploadRequest,
};

use super::{ApiAnswer, Control, ControlError, Executions};
use standin::agents::FileDelivery;
use standin::doorbell::Doorbell;
use standin::row::RowStore;

impl<S: RowStore, D: Doorbell, E: Executions> Control<'_, S, D, E> {
    pub(super) async fn upload(&self, body: &Value) -> Result<ApiAnswer, ControlError> {
        let Some(blobs) = self.artifacts else {
            return Ok(ApiAnswer::error(
                404,
                "this deployment keeps no files (the function has no ARTIFACTS_BUCKET): give a file as an https url or inline bytes",
            ));
        };
        let request = match UploadRequest::parse(body) {
            Ok(request) => request,
            Err(BodyError(message)) => return Ok(ApiAnswer::error(400, message)),
        };
        let upload_id = UploadId::from_random(rand::random());
        let link = blobs
            .put_link(
                &upload_id.key(),
                UPLOAD_LINK_SECONDS,
                request.size,
                request.media_type.as_deref(),
            )
            .await?;
        Ok(ApiAnswer::of(
            200,
            UploadLink {
                upload_id,
                url: link.url,
                headers: link.headers.into_iter().collect(),
                expires_at: standin::clock::rfc3339_in(UPLOAD_LINK_SECONDS),
            },
        ))
    }

    /// Why a start's or a reply's parts cannot go (an `upload_id` with no file put, or
    /// one larger than an upload may be, or than `delivery` gives as bytes), naming the
    /// part; None when they can.
    pub(super) async fn unput_upload(
        &self,
        parts: &[InputPart],
        delivery: FileDelivery,
    ) -> Result<Option<String>, ControlError> {
        let mut budget = standin::uploads::BytesBudget::default();
        for (i, part) in parts.iter().enumerate() {
            let InputPart::File(InputFile {
                content: FileContent::Upload(id),
                ..
            }) = part
            else {
                continue;
            };
            let at = format!("parts[{i}].upload_id");
            let Some(blobs) = self.artifacts else {
                return Ok(Some(format!(
                    "{at}: this deployment keeps no files (no artifacts bucket)"
                )));
            };
            match blobs.size(&id.key()).await? {
                None => {
                    return Ok(Some(format!(
                        "{at}: no file was put for {id}: PUT its bytes to the upload's link first (it lasts {} minutes), or ask POST /uploads for a new one",
                        UPLOAD_LINK_SECONDS / 60
                    )));
                }
                Some(size) if size > MAX_UPLOAD_BYTES => {
                    return Ok(Some(format!(
                        "{at}: {id} holds {size} bytes, more than an upload may ({MAX_UPLOAD_BYTES})"
                    )));
                }
                Some(size) if delivery == FileDelivery::Bytes => {
                    if let Err(refused) = budget.spend(&at, size) {
                        return Ok(Some(refused));
                    }
                }
                Some(_) => {}
            }
        }
        Ok(None)
    }
}

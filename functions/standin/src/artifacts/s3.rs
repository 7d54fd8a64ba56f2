//! Blobs in the stack's artifacts bucket (S3): parts by multipart upload as they arrive,
//! the manifest by conditional writes (`If-Match`, `If-None-Match`), links presigned.

use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use futures_util::future::BoxFuture;

use super::blobs::{BlobError, Blobs, PutLink, Upload, Versioned};

pub struct S3Blobs {
    s3: Client,
    bucket: String,
}

impl S3Blobs {
    pub fn new(s3: Client, bucket: impl Into<String>) -> Self {
        Self {
            s3,
            bucket: bucket.into(),
        }
    }
}

fn unavailable<E: ProvideErrorMetadata + std::fmt::Debug>(
    what: &str,
) -> impl FnOnce(aws_sdk_s3::error::SdkError<E>) -> BlobError + '_ {
    move |err| {
        let code = err.code().unwrap_or("no code").to_owned();
        let message = err.message().unwrap_or_default().to_owned();
        let status = err.raw_response().map(|r| r.status().as_u16());
        let said = format!("S3 {what}: {code} {message}");
        if status.is_some_and(refused_for_good) && !THROTTLED.contains(&code.as_str()) {
            BlobError::Refused(said)
        } else {
            BlobError::Unavailable(said)
        }
    }
}

/// What S3 says when asked too fast, whatever the status it comes with.
const THROTTLED: [&str; 3] = ["SlowDown", "Throttling", "ThrottlingException"];

/// A 4xx that asking again does not change (access denied, no such bucket): not a
/// timeout, not too many requests.
fn refused_for_good(status: u16) -> bool {
    (400..500).contains(&status) && status != 408 && status != 429
}

impl Blobs for S3Blobs {
    fn put(&self, key: &str, bytes: Vec<u8>) -> BoxFuture<'_, Result<(), BlobError>> {
        let key = key.to_owned();
        Box::pin(async move {
            self.s3
                .put_object()
                .bucket(&self.bucket)
                .key(key)
                .body(ByteStream::from(bytes))
                .send()
                .await
                .map(drop)
                .map_err(unavailable("PutObject"))
        })
    }

    fn put_if(
        &self,
        key: &str,
        bytes: Vec<u8>,
        etag: Option<&str>,
    ) -> BoxFuture<'_, Result<Option<String>, BlobError>> {
        let key = key.to_owned();
        let etag = etag.map(str::to_owned);
        Box::pin(async move {
            let request = self
                .s3
                .put_object()
                .bucket(&self.bucket)
                .key(key)
                .content_type("application/json")
                .body(ByteStream::from(bytes));
            let request = match etag {
                Some(etag) => request.if_match(etag),
                None => request.if_none_match("*"),
            };
            match request.send().await {
                Ok(written) => Ok(written.e_tag().map(str::to_owned)),
                Err(err)
                    if matches!(
                        err.code(),
                        Some("PreconditionFailed" | "ConditionalRequestConflict")
                    ) || err
                        .raw_response()
                        .is_some_and(|r| matches!(r.status().as_u16(), 409 | 412)) =>
                {
                    Err(BlobError::Conflict)
                }
                Err(err) => Err(unavailable("PutObject")(err)),
            }
        })
    }

    fn get(&self, key: &str) -> BoxFuture<'_, Result<Option<Versioned>, BlobError>> {
        let key = key.to_owned();
        Box::pin(async move {
            let object = match self
                .s3
                .get_object()
                .bucket(&self.bucket)
                .key(key)
                .send()
                .await
            {
                Ok(object) => object,
                Err(err) if err.code() == Some("NoSuchKey") => return Ok(None),
                Err(err) => return Err(unavailable("GetObject")(err)),
            };
            let etag = object.e_tag().map(str::to_owned);
            let collected = object
                .body
                .collect()
                .await
                .map_err(|e| BlobError::Unavailable(format!("S3 GetObject body: {e}")))?;
            // Its buffer, not a copy of it, where it is one piece (a file handed over as
            // bytes is held several times while its message is built).
            let bytes = Vec::from(collected.into_bytes());
            Ok(Some(Versioned { bytes, etag }))
        })
    }

    fn delete(&self, key: &str) -> BoxFuture<'_, Result<(), BlobError>> {
        let key = key.to_owned();
        Box::pin(async move {
            self.s3
                .delete_object()
                .bucket(&self.bucket)
                .key(key)
                .send()
                .await
                .map(drop)
                .map_err(unavailable("DeleteObject"))
        })
    }

    fn start(&self, key: &str) -> BoxFuture<'_, Result<Upload, BlobError>> {
        let key = key.to_owned();
        Box::pin(async move {
            let started = self
                .s3
                .create_multipart_upload()
                .bucket(&self.bucket)
                .key(&key)
                .send()
                .await
                .map_err(unavailable("CreateMultipartUpload"))?;
            let id = started
                .upload_id()
                .ok_or_else(|| BlobError::Unavailable("S3 gave no upload id".into()))?;
            Ok(Upload {
                key,
                id: id.to_owned(),
                parts: Vec::new(),
            })
        })
    }

    fn part<'a>(
        &'a self,
        upload: &'a mut Upload,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<(), BlobError>> {
        Box::pin(async move {
            let number = i32::try_from(upload.parts.len() + 1).unwrap_or(i32::MAX);
            let part = self
                .s3
                .upload_part()
                .bucket(&self.bucket)
                .key(&upload.key)
                .upload_id(&upload.id)
                .part_number(number)
                .body(ByteStream::from(bytes))
                .send()
                .await
                .map_err(unavailable("UploadPart"))?;
            let etag = part.e_tag().unwrap_or_default().to_owned();
            upload.parts.push((number, etag));
            Ok(())
        })
    }

    fn complete(&self, upload: Upload) -> BoxFuture<'_, Result<(), BlobError>> {
        Box::pin(async move {
            let parts = upload
                .parts
                .iter()
                .map(|(n, etag)| CompletedPart::builder().part_number(*n).e_tag(etag).build())
                .collect();
            self.s3
                .complete_multipart_upload()
                .bucket(&self.bucket)
                .key(&upload.key)
                .upload_id(&upload.id)
                .multipart_upload(
                    CompletedMultipartUpload::builder()
                        .set_parts(Some(parts))
                        .build(),
                )
                .send()
                .await
                .map(drop)
                .map_err(unavailable("CompleteMultipartUpload"))
        })
    }

    fn abort(&self, upload: Upload) -> BoxFuture<'_, Result<(), BlobError>> {
        Box::pin(async move {
            self.s3
                .abort_multipart_upload()
                .bucket(&self.bucket)
                .key(&upload.key)
                .upload_id(&upload.id)
                .send()
                .await
                .map(drop)
                .map_err(unavailable("AbortMultipartUpload"))
        })
    }

    fn link(&self, key: &str, seconds: u64) -> BoxFuture<'_, Result<String, BlobError>> {
        let key = key.to_owned();
        Box::pin(async move {
            let config = PresigningConfig::expires_in(Duration::from_secs(seconds))
                .map_err(|e| BlobError::Unavailable(format!("presigning: {e}")))?;
            let request = self
                .s3
                .get_object()
                .bucket(&self.bucket)
                .key(key)
                .presigned(config)
                .await
                .map_err(unavailable("presigned GetObject"))?;
            Ok(request.uri().to_owned())
        })
    }

    fn put_link<'a>(
        &'a self,
        key: &'a str,
        seconds: u64,
        size: u64,
        media_type: Option<&'a str>,
    ) -> BoxFuture<'a, Result<PutLink, BlobError>> {
        Box::pin(async move {
            let config = PresigningConfig::expires_in(Duration::from_secs(seconds))
                .map_err(|e| BlobError::Unavailable(format!("presigning: {e}")))?;
            let length = i64::try_from(size)
                .map_err(|_| BlobError::Unavailable(format!("{size} bytes is not a size")))?;
            let request = self
                .s3
                .put_object()
                .bucket(&self.bucket)
                .key(key)
                .content_length(length)
                .set_content_type(media_type.map(str::to_owned))
                // Writes once: the file the API checked is the file the agent reads.
                .if_none_match("*")
                .presigned(config)
                .await
                .map_err(unavailable("presigned PutObject"))?;
            Ok(PutLink {
                url: request.uri().to_owned(),
                // Every HTTP client sets the length from the body it sends, and the host
                // from the URL.
                headers: request
                    .headers()
                    .filter(|(name, _)| {
                        !name.eq_ignore_ascii_case("content-length")
                            && !name.eq_ignore_ascii_case("host")
                    })
                    .map(|(name, value)| (name.to_owned(), value.to_owned()))
                    .collect(),
            })
        })
    }

    fn size(&self, key: &str) -> BoxFuture<'_, Result<Option<u64>, BlobError>> {
        let key = key.to_owned();
        Box::pin(async move {
            let head = self
                .s3
                .head_object()
                .bucket(&self.bucket)
                .key(key)
                .send()
                .await;
            match head {
                Ok(head) => Ok(Some(
                    head.content_length()
                        .and_then(|n| u64::try_from(n).ok())
                        .unwrap_or_default(),
                )),
                Err(err) if err.as_service_error().is_some_and(|e| e.is_not_found()) => Ok(None),
                Err(err) => Err(unavailable("HeadObject")(err)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Presigning is done offline: the signed headers are what S3 will hold the PUT to.
    #[tokio::test]
    async fn an_upload_link_signs_its_length_its_media_type_and_once_only() {
        let config = aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new("eu-west-1"))
            .credentials_provider(aws_credential_types::Credentials::new(
                "AKIDEXAMPLE",
                "secret",
                None,
                None,
                "test",
            ))
            .build();
        let blobs = S3Blobs::new(Client::from_conf(config), "bucket");
        let link = blobs
            .put_link("uploads/up-1", 900, 200_000, Some("text/csv"))
            .await
            .expect("presigned");
        let signed = link
            .url
            .split(['?', '&'])
            .find_map(|pair| pair.strip_prefix("X-Amz-SignedHeaders="))
            .expect("signed headers named")
            .to_owned();
        for header in ["content-length", "content-type", "if-none-match", "host"] {
            assert!(signed.contains(header), "{header} in {signed}");
        }
        assert!(link.url.contains("uploads/up-1") && link.url.contains("X-Amz-Expires=900"));
        let mut headers = link.headers.clone();
        headers.sort();
        assert_eq!(
            headers,
            [
                ("content-type".to_owned(), "text/csv".to_owned()),
                ("if-none-match".to_owned(), "*".to_owned()),
            ],
            "what the client must send; its length and host it sets itself"
        );
    }

    #[test]
    fn a_refusal_asking_again_does_not_change_is_told_from_a_passing_one() {
        for status in [400, 403, 404, 405, 411] {
            assert!(refused_for_good(status), "{status}");
        }
        for status in [200, 408, 429, 500, 503] {
            assert!(!refused_for_good(status), "{status}");
        }
    }
}

//! The hearer on Lambda: the door invokes the hear function and waits for its answer.

use aws_sdk_lambda::Client;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;

use super::hearer::{HearRequest, Heard, Hearer, HearerError};

#[derive(Clone)]
pub struct LambdaHearer {
    client: Client,
    function: String,
}

impl LambdaHearer {
    pub fn new(client: Client, function: impl Into<String>) -> Self {
        Self {
            client,
            function: function.into(),
        }
    }
}

impl Hearer for LambdaHearer {
    async fn hear(&self, request: &HearRequest) -> Result<Heard, HearerError> {
        let payload =
            serde_json::to_vec(request).map_err(|e| HearerError(format!("encode: {e}")))?;
        let out = self
            .client
            .invoke()
            .function_name(&self.function)
            .invocation_type(InvocationType::RequestResponse)
            .payload(Blob::new(payload))
            .send()
            .await
            .map_err(|e| HearerError(aws_sdk_lambda::error::DisplayErrorContext(&e).to_string()))?;
        if let Some(kind) = out.function_error() {
            return Err(HearerError(format!("the hear function failed ({kind})")));
        }
        let answer = out.payload().map(Blob::as_ref).unwrap_or_default();
        serde_json::from_slice(answer).map_err(|e| HearerError(format!("its answer: {e}")))
    }
}

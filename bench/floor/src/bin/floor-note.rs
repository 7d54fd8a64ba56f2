//! The floor's one step after the park: the note to the parent's FIFO queue.

use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_from_env().await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let queue_url = bench_floor::env("QUEUE_URL")?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| {
        let (sqs, queue_url) = (sqs.clone(), queue_url.clone());
        async move {
            let id = event.payload["id"]
                .as_str()
                .ok_or("payload.id is missing")?;
            let heard = &event.payload["heard"];
            let seq = heard["seq"].as_u64().unwrap_or(0);
            let note = json!({"task_id": id, "seq": seq, "text": heard["text"]});
            sqs.send_message()
                .queue_url(queue_url)
                .message_group_id(id)
                .message_deduplication_id(format!("{id}:{seq}"))
                .message_body(note.to_string())
                .send()
                .await?;
            Ok::<Value, Error>(json!({ "sent": seq }))
        }
    }))
    .await
}

//! The API of the smoke stack (REST API, `{id}` path parameters):
//! - `POST /items/{id}` `{"op": "bump" | "close"}`: conditional UpdateItem (409 once closed);
//! - `POST /ring/{id}`: SendTaskSuccess with the token the park step stored;
//! - `POST /notes/{id}` `{"seq": N}`: a FIFO message, grouped by id, deduplicated by seq.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValue;
use lambda_http::{Body, Error, Request, RequestExt, Response, service_fn};
use serde_json::{Value, json};
use smoke_functions::{env, init_logs, s};

struct Ctx {
    db: aws_sdk_dynamodb::Client,
    sfn: aws_sdk_sfn::Client,
    sqs: aws_sdk_sqs::Client,
    table: String,
    queue_url: String,
}

fn reply(status: u16, body: Value) -> Result<Response<Body>, Error> {
    Ok(Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))?)
}

async fn handle(ctx: &Ctx, request: Request) -> Result<Response<Body>, Error> {
    let params = request.path_parameters();
    let Some(id) = params.first("id") else {
        return reply(400, json!({"error": "no id in the path"}));
    };
    let body: Value = match request.body() {
        Body::Text(t) => serde_json::from_str(t).unwrap_or(Value::Null),
        Body::Binary(b) => serde_json::from_slice(b).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let path = request.raw_http_path();
    if path.starts_with("/items/") {
        items(ctx, id, &body).await
    } else if path.starts_with("/ring/") {
        ring(ctx, id).await
    } else if path.starts_with("/notes/") {
        note(ctx, id, &body).await
    } else {
        reply(404, json!({"error": "no such route"}))
    }
}

async fn items(ctx: &Ctx, id: &str, body: &Value) -> Result<Response<Body>, Error> {
    let update = match body["op"].as_str() {
        Some("bump") => "SET n = if_not_exists(n, :zero) + :one",
        Some("close") => "SET closed = :yes",
        _ => return reply(400, json!({"error": "op must be bump or close"})),
    };
    let mut call = ctx
        .db
        .update_item()
        .table_name(&ctx.table)
        .key("id", s(id))
        .update_expression(update)
        .condition_expression("attribute_not_exists(closed)")
        .return_values(ReturnValue::AllNew);
    call = if body["op"] == "bump" {
        call.expression_attribute_values(
            ":zero",
            aws_sdk_dynamodb::types::AttributeValue::N("0".into()),
        )
        .expression_attribute_values(
            ":one",
            aws_sdk_dynamodb::types::AttributeValue::N("1".into()),
        )
    } else {
        call.expression_attribute_values(
            ":yes",
            aws_sdk_dynamodb::types::AttributeValue::Bool(true),
        )
    };
    match call.send().await {
        Ok(out) => {
            let n = out
                .attributes()
                .and_then(|a| a.get("n"))
                .and_then(|v| v.as_n().ok())
                .and_then(|n| n.parse::<u64>().ok());
            reply(200, json!({"id": id, "n": n}))
        }
        Err(SdkError::ServiceError(e))
            if matches!(e.err(), UpdateItemError::ConditionalCheckFailedException(_)) =>
        {
            reply(409, json!({"id": id, "error": "closed"}))
        }
        Err(e) => Err(e.into()),
    }
}

async fn ring(ctx: &Ctx, id: &str) -> Result<Response<Body>, Error> {
    let item = ctx
        .db
        .get_item()
        .table_name(&ctx.table)
        .key("id", s(id))
        .consistent_read(true)
        .send()
        .await?;
    let Some(token) = item
        .item()
        .and_then(|i| i.get("park_token"))
        .and_then(|v| v.as_s().ok())
    else {
        return reply(404, json!({"error": "not parked"}));
    };
    ctx.sfn
        .send_task_success()
        .task_token(token)
        .output(json!({"rung": id}).to_string())
        .send()
        .await?;
    reply(200, json!({"rung": id}))
}

async fn note(ctx: &Ctx, id: &str, body: &Value) -> Result<Response<Body>, Error> {
    let Some(seq) = body["seq"].as_u64() else {
        return reply(400, json!({"error": "seq must be a number"}));
    };
    ctx.sqs
        .send_message()
        .queue_url(&ctx.queue_url)
        .message_group_id(id)
        .message_deduplication_id(format!("{id}-{seq}"))
        .message_body(json!({"id": id, "seq": seq}).to_string())
        .send()
        .await?;
    reply(200, json!({"sent": seq}))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    init_logs();
    let config = aws_config::load_from_env().await;
    let ctx = Ctx {
        db: aws_sdk_dynamodb::Client::new(&config),
        sfn: aws_sdk_sfn::Client::new(&config),
        sqs: aws_sdk_sqs::Client::new(&config),
        table: env("TABLE_NAME")?,
        queue_url: env("QUEUE_URL")?,
    };
    let ctx = &ctx;
    lambda_http::run(service_fn(move |request| handle(ctx, request))).await
}

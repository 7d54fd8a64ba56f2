//! The floor's push receiver (`POST /floor/{id}`): reads the stored token and calls
//! SendTaskSuccess with the body, nothing else: no authentication, no checks.

use aws_sdk_dynamodb::types::AttributeValue;
use lambda_http::{Body, Error, Request, Response, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_from_env().await;
    let db = aws_sdk_dynamodb::Client::new(&config);
    let sfn = aws_sdk_sfn::Client::new(&config);
    let table = bench_floor::env("TABLE_NAME")?;
    lambda_http::run(service_fn(|request: Request| {
        let (db, sfn, table) = (db.clone(), sfn.clone(), table.clone());
        async move {
            let id = bench_floor::path_id(&request);
            let body = match request.body() {
                Body::Text(t) => t.clone(),
                Body::Binary(b) => String::from_utf8_lossy(b).into_owned(),
                _ => "{}".to_owned(),
            };
            let item = db
                .get_item()
                .table_name(table)
                .key("id", AttributeValue::S(id))
                .consistent_read(true)
                .send()
                .await?;
            let token = item
                .item()
                .and_then(|i| i.get("token"))
                .and_then(|t| t.as_s().ok())
                .ok_or("nothing parked under this id")?;
            sfn.send_task_success()
                .task_token(token)
                .output(body)
                .send()
                .await?;
            Ok::<_, Error>(Response::builder().status(204).body(Body::Empty)?)
        }
    }))
    .await
}

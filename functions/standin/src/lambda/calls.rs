//! The AWS calls a function makes, as the IAM actions they need, written to its log when
//! `RECORD_AWS_CALLS` is `true` (the test stack; off by default). The tests compare what
//! each function was seen to call with what its policy in `template.yaml` allows, so a
//! missing permission fails here instead of in a first deploy to AWS.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemInput;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemInput;
use aws_sdk_dynamodb::operation::get_item::GetItemInput;
use aws_sdk_dynamodb::operation::put_item::PutItemInput;
use aws_sdk_dynamodb::operation::query::QueryInput;
use aws_sdk_dynamodb::operation::scan::ScanInput;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsInput;
use aws_sdk_dynamodb::operation::update_item::UpdateItemInput;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, Input,
};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

pub const RECORD_AWS_CALLS: &str = "RECORD_AWS_CALLS";

/// The IAM action prefix of an SDK service name.
fn prefix(service: &str) -> &str {
    match service {
        "DynamoDB" => "dynamodb",
        "SFN" => "states",
        "SQS" => "sqs",
        "EventBridge" => "events",
        "Secrets Manager" => "secretsmanager",
        "S3" => "s3",
        "STS" => "sts",
        "Lambda" => "lambda",
        other => other,
    }
}

/// One permission a call needs: the IAM action, and the DynamoDB table it acts on (the
/// policies grant per table; other services' calls are checked by action).
pub type Needed = (String, Option<String>);

/// The permissions one call needs. Batches need the single action; a DynamoDB
/// transaction needs the action of each of its items (there is no IAM action of its own),
/// on each item's table.
pub fn actions(service: &str, operation: &str, input: &Input) -> Vec<Needed> {
    let prefix = prefix(service);
    let needs = |action: &str, table: Option<&str>| {
        (format!("{prefix}:{action}"), table.map(str::to_owned))
    };
    if let Some(transaction) = input.downcast_ref::<TransactWriteItemsInput>() {
        let items = transaction.transact_items().iter().flat_map(|item| {
            [
                item.put().map(|i| ("PutItem", i.table_name())),
                item.update().map(|i| ("UpdateItem", i.table_name())),
                item.delete().map(|i| ("DeleteItem", i.table_name())),
                item.condition_check()
                    .map(|i| ("ConditionCheckItem", i.table_name())),
            ]
        });
        let needed = items.flatten().map(|(op, table)| needs(op, Some(table)));
        return needed.collect::<BTreeSet<_>>().into_iter().collect();
    }
    if let Some(batch) = input.downcast_ref::<BatchGetItemInput>() {
        return batch
            .request_items()
            .into_iter()
            .flat_map(|items| items.keys())
            .map(|table| needs("BatchGetItem", Some(table)))
            .collect();
    }
    let action = match operation {
        "SendMessageBatch" => "SendMessage",
        "DeleteMessageBatch" => "DeleteMessage",
        // A multipart upload is PutObject's, in IAM's terms; a HEAD is GetObject's.
        "CreateMultipartUpload" | "UploadPart" | "CompleteMultipartUpload" => "PutObject",
        "HeadObject" => "GetObject",
        // Lambda's Invoke is granted as InvokeFunction.
        "Invoke" => "InvokeFunction",
        other => other,
    };
    vec![needs(action, table(input))]
}

/// The table a single-table DynamoDB call acts on.
fn table(input: &Input) -> Option<&str> {
    None.or_else(|| input.downcast_ref::<GetItemInput>()?.table_name())
        .or_else(|| input.downcast_ref::<PutItemInput>()?.table_name())
        .or_else(|| input.downcast_ref::<UpdateItemInput>()?.table_name())
        .or_else(|| input.downcast_ref::<DeleteItemInput>()?.table_name())
        .or_else(|| input.downcast_ref::<QueryInput>()?.table_name())
        .or_else(|| input.downcast_ref::<ScanInput>()?.table_name())
}

/// Logs the IAM actions of every call made through the client it is given to.
#[derive(Debug, Clone, Copy)]
pub struct CallRecorder;

impl Intercept for CallRecorder {
    fn name(&self) -> &'static str {
        "CallRecorder"
    }

    fn read_before_serialization(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(metadata) = cfg.load::<Metadata>() {
            for (action, table) in actions(metadata.service(), metadata.name(), context.input()) {
                tracing::info!(aws_call = %action, table = %table.unwrap_or_default(), "AWS call");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};

    use super::*;

    fn boxed<T: std::fmt::Debug + Send + Sync + 'static>(input: T) -> Input {
        Input::erase(input)
    }

    fn needed(action: &str, table: Option<&str>) -> Needed {
        (action.to_owned(), table.map(str::to_owned))
    }

    #[test]
    fn calls_become_the_permissions_they_need() {
        let update = UpdateItemInput::builder().table_name("rows").build();
        let Ok(update) = update else {
            panic!("an input")
        };
        assert_eq!(
            actions("DynamoDB", "UpdateItem", &boxed(update)),
            [needed("dynamodb:UpdateItem", Some("rows"))]
        );
        let none = boxed(());
        assert_eq!(
            actions("Lambda", "Invoke", &none),
            [needed("lambda:InvokeFunction", None)]
        );
        assert_eq!(
            actions("SFN", "SendTaskSuccess", &none),
            [needed("states:SendTaskSuccess", None)]
        );
        assert_eq!(
            actions("SQS", "SendMessageBatch", &none),
            [needed("sqs:SendMessage", None)]
        );
        assert_eq!(
            actions("EventBridge", "PutEvents", &none),
            [needed("events:PutEvents", None)]
        );
    }

    #[test]
    fn a_transaction_needs_the_action_of_each_item_on_its_table() {
        let key = || AttributeValue::S("si-1".into());
        let update = Update::builder()
            .table_name("rows")
            .key("task_id", key())
            .update_expression("SET a = :a")
            .build();
        let put = Put::builder()
            .table_name("notes")
            .item("task_id", key())
            .build();
        let (Ok(update), Ok(put)) = (update, put) else {
            panic!("items build");
        };
        let transaction = TransactWriteItemsInput::builder()
            .transact_items(TransactWriteItem::builder().update(update).build())
            .transact_items(TransactWriteItem::builder().put(put).build())
            .build();
        let Ok(transaction) = transaction else {
            panic!("a transaction");
        };
        assert_eq!(
            actions("DynamoDB", "TransactWriteItems", &boxed(transaction)),
            [
                needed("dynamodb:PutItem", Some("notes")),
                needed("dynamodb:UpdateItem", Some("rows"))
            ]
        );
    }
}

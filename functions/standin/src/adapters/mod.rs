//! The ports on AWS: the row store on DynamoDB, the doorbell and the parent callback on
//! Step Functions, the parent queue on SQS FIFO, the note bus on EventBridge. The domain
//! never sees these types.

pub mod dynamo;
pub mod events;
pub mod sfn;
pub mod sqs;

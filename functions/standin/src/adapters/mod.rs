//! The ports on AWS: the row store on DynamoDB, the doorbell on Step Functions, the
//! parent queue on SQS FIFO. The domain never sees these types.

pub mod dynamo;
pub mod sfn;
pub mod sqs;

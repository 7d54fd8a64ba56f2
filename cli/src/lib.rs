//! The `standin` command's library: where the stack is (LocalStack or AWS), its control
//! API (SigV4-signed, as the API's AWS_IAM authorizer requires on AWS), and the parent
//! queue. The demo driver (`standin-demo`) uses the same pieces.

pub mod agents;
pub mod artifacts;
pub mod console;
pub mod control;
pub mod error;
pub mod events;
pub mod keys;
mod mcp;
mod media;
pub mod note_log;
pub mod parts;
pub mod stack;
pub mod target;
mod uploads;

pub use control::ControlClient;
pub use error::CliError;
pub use events::{Heard, NoteStream};
pub use stack::StackInfo;
pub use target::Target;

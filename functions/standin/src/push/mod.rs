//! Push: the token an agent presents and the receiver that checks it (abuse cases 1-9 in
//! docs/architecture.md).

pub mod receiver;
pub mod token;

pub use token::{PUSH_PATH_PREFIX, PushToken, TokenDigest, push_url};

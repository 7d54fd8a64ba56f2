//! Push: the token an agent presents, the receiver that checks it (abuse cases 1-9 in
//! docs/architecture.md), and the hearing the door hands a push it claimed.

pub mod door;
pub mod hearer;
pub mod invoke;
pub mod receiver;
pub mod token;

pub use hearer::{HearRequest, Heard, Hearer, HearerError, NoHearer};
pub use token::{PUSH_PATH_PREFIX, PushToken, push_url};

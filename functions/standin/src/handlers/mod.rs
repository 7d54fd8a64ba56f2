//! What each state-machine step does, over the ports. The Lambda mains only build the
//! adapters and call these; the state (`Step`) is the execution's JSON.

pub mod control;
pub mod follow;
pub mod steps;

pub use follow::{FollowEnd, FollowTiming, follow};
pub use steps::{ParkOutcome, Step, StepError, Successor};

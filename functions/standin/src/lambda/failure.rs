//! A step's failure as Step Functions sees it: its kind is the error's name, so the state
//! machine retries only what may succeed on a second try (`StandIn.Transient`) and ends
//! the stand-in at once on what never will (`StandIn.Permanent`: a bad input, no row).

use lambda_runtime::Diagnostic;

use crate::row::StoreError;
use crate::steps::StepError;

pub const TRANSIENT: &str = "StandIn.Transient";
pub const PERMANENT: &str = "StandIn.Permanent";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFailure {
    pub permanent: bool,
    pub message: String,
}

impl StepFailure {
    pub fn permanent(message: impl Into<String>) -> Self {
        Self {
            permanent: true,
            message: message.into(),
        }
    }

    pub fn error_type(&self) -> &'static str {
        if self.permanent { PERMANENT } else { TRANSIENT }
    }
}

impl From<StepError> for StepFailure {
    fn from(err: StepError) -> Self {
        let permanent = match &err {
            // DynamoDB or S3 throttled or unreachable: the next attempt may get through.
            StepError::Store(StoreError::Backend(_))
            | StepError::Registry(_)
            | StepError::Uploads(_) => false,
            // No row, a row that exists, a guard that refuses, a step input without what
            // it needs: the same call gives the same answer.
            StepError::Store(_)
            | StepError::NoRow(_)
            | StepError::Input(_)
            | StepError::NotOurs(_)
            | StepError::Unrecorded(_) => true,
        };
        Self {
            permanent,
            message: err.to_string(),
        }
    }
}

impl From<StepFailure> for Diagnostic {
    fn from(failure: StepFailure) -> Self {
        Self {
            error_type: failure.error_type().to_owned(),
            error_message: failure.message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_store_outage_is_transient() {
        let kind = |err: StepError| Diagnostic::from(StepFailure::from(err)).error_type;
        assert_eq!(
            kind(StepError::Store(StoreError::Backend("throttled".into()))),
            TRANSIENT
        );
        for permanent in [
            StepError::NoRow("t".into()),
            StepError::Input("message"),
            StepError::Store(StoreError::NotFound("t".into())),
            StepError::Store(StoreError::Refused("t".into())),
            StepError::Store(StoreError::AlreadyExists("t".into())),
            StepError::NotOurs("execution x is not stand-in t's".into()),
            StepError::Unrecorded("task_id must be …".into()),
        ] {
            assert_eq!(kind(permanent), PERMANENT);
        }
    }

    #[test]
    fn the_message_says_what_failed() {
        let d = Diagnostic::from(StepFailure::from(StepError::NoRow("sub-9".into())));
        assert!(d.error_message.contains("sub-9"), "{}", d.error_message);
    }
}

//! A configuration that cannot be used, by the field that is wrong
//! (`agents[1].follow_interval`) and what is wrong with it.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct ConfigError {
    pub field: String,
    pub problem: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

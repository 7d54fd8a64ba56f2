//! How every request body the API reads is refused: one message a caller can act on,
//! naming the field.

/// A request body the API refuses, with the message it answers (400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BodyError(pub String);

/// A refusal as every check words one: the field, what was expected, what was got.
pub(crate) fn field_refused(field: &str, problem: impl std::fmt::Display) -> BodyError {
    BodyError(format!("{field}: {problem}"))
}

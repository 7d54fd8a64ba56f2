//! Ids with rules: a value of these types has passed them, so nothing downstream checks
//! again and `""` never stands for "none" (that is `Option`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why an id was refused, in words a caller can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IdError(&'static str);

/// A stand-in's id, which is also its execution's name: 1-64 characters of
/// `[A-Za-z0-9_-]`, without `__` (a roll names its executions `{id}__1`, `{id}__2`, …).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId(String);

impl TaskId {
    pub const RULE: &'static str = r#"task_id: must be 1-64 characters of [A-Za-z0-9_-], without "__" (kept for rolled executions)"#;

    pub fn parse(id: &str) -> Result<Self, IdError> {
        let valid = !id.is_empty()
            && id.len() <= 64
            && !id.contains("__")
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if valid {
            Ok(Self(id.to_owned()))
        } else {
            Err(IdError(Self::RULE))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The longest name a parent may give a reply.
pub const MAX_REPLY_ID_BYTES: usize = 128;

/// The parent's name for a reply, so that sending it again is harmless: 1 to 128
/// printable ASCII characters without spaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ReplyId(String);

impl ReplyId {
    pub const RULE: &'static str =
        "reply_id: must be 1 to 128 printable ASCII characters without spaces";

    pub fn parse(id: &str) -> Result<Self, IdError> {
        let valid = !id.is_empty()
            && id.len() <= MAX_REPLY_ID_BYTES
            && id.bytes().all(|b| b.is_ascii_graphic());
        if valid {
            Ok(Self(id.to_owned()))
        } else {
            Err(IdError(Self::RULE))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! string_conversions {
    ($($id:ident),*) => {$(
        impl TryFrom<String> for $id {
            type Error = IdError;
            fn try_from(id: String) -> Result<Self, IdError> {
                Self::parse(&id)
            }
        }
        impl From<$id> for String {
            fn from(id: $id) -> String {
                id.0
            }
        }
        impl std::ops::Deref for $id {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }
        impl AsRef<str> for $id {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Display for $id {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    )*};
}

string_conversions!(TaskId, ReplyId);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_is_an_execution_name_that_leaves_room_for_rolls() {
        for good in ["a", "si-1f", "A_b-9", &"x".repeat(64)] {
            assert_eq!(TaskId::parse(good).map(String::from), Ok(good.to_owned()));
        }
        for bad in ["", "a__b", "a b", "a/b", "é", &"x".repeat(65)] {
            assert_eq!(TaskId::parse(bad), Err(IdError(TaskId::RULE)), "{bad:?}");
        }
    }

    #[test]
    fn ids_are_checked_when_read_from_json_too() -> Result<(), String> {
        let read: Result<TaskId, _> = serde_json::from_str(r#""a__1""#);
        let err = read.map_err(|e| e.to_string()).expect_err("a roll's name");
        assert!(err.contains("without \"__\""), "{err}");
        let reply: Result<ReplyId, _> = serde_json::from_str(r#""r 1""#);
        assert!(reply.is_err());
        assert_eq!(
            serde_json::to_string(&TaskId::parse("si-1").map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string()),
            Ok(r#""si-1""#.to_owned())
        );
        Ok(())
    }

    #[test]
    fn the_rules_name_the_limits_they_check() {
        assert!(ReplyId::RULE.contains(&format!("1 to {MAX_REPLY_ID_BYTES} ")));
    }

    #[test]
    fn a_reply_id_is_short_printable_ascii() {
        assert!(ReplyId::parse("r-1:retry#2").is_ok());
        assert!(ReplyId::parse(&"r".repeat(MAX_REPLY_ID_BYTES)).is_ok());
        for bad in [
            "",
            "has space",
            "tab\t",
            "ü",
            &"r".repeat(MAX_REPLY_ID_BYTES + 1),
        ] {
            assert_eq!(ReplyId::parse(bad), Err(IdError(ReplyId::RULE)), "{bad:?}");
        }
    }
}

//! Where configuration is read from, and how one variable reads: a missing or malformed
//! value is an error naming it.

use crate::agents::ConfigError;

/// Where configuration is read from: the process environment in a function, a map in a
/// test.
pub trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl Env for std::collections::HashMap<&str, &str> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).map(|v| (*v).to_owned())
    }
}

pub(super) fn required(env: &impl Env, name: &str) -> Result<String, ConfigError> {
    optional(env, name).ok_or_else(|| ConfigError {
        field: name.to_owned(),
        problem: "environment variable is not set".into(),
    })
}

/// A blank value counts as unset: the template writes `""` for an unused parameter.
pub(super) fn optional(env: &impl Env, name: &str) -> Option<String> {
    env.var(name).filter(|v| !v.trim().is_empty())
}

pub(super) fn number(env: &impl Env, name: &str, default: u64) -> Result<u64, ConfigError> {
    match optional(env, name) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| ConfigError {
            field: name.to_owned(),
            problem: format!("must be a whole number, got {v:?}"),
        }),
    }
}

pub(super) fn positive(env: &impl Env, name: &str, default: u64) -> Result<u64, ConfigError> {
    match number(env, name, default)? {
        0 => Err(ConfigError {
            field: name.to_owned(),
            problem: "must be at least 1".into(),
        }),
        value => Ok(value),
    }
}

/// `true` or `false`, default `false`.
pub(super) fn boolean(env: &impl Env, name: &str) -> Result<bool, ConfigError> {
    match optional(env, name).as_deref().map(str::trim) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(ConfigError {
            field: name.to_owned(),
            problem: format!("must be true or false, got {other:?}"),
        }),
    }
}

//! Where configuration is read from, and how one variable reads: a missing or malformed
//! value is an error naming it.

use std::path::PathBuf;
use std::time::Duration;

use crate::agents::ConfigError;

/// Where configuration is read from: the process environment in a function, a map in a
/// test.
pub trait Env {
    fn var(&self, name: &str) -> Option<String>;
}

pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

#[cfg(test)]
impl Env for std::collections::HashMap<&str, &str> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).map(|v| (*v).to_owned())
    }
}

pub(super) fn required(env: &impl Env, name: &str) -> Result<String, ConfigError> {
    optional(env, name).ok_or_else(|| ConfigError::new(name, "environment variable is not set"))
}

/// A blank value counts as unset: the template writes `""` for an unused parameter.
pub(super) fn optional(env: &impl Env, name: &str) -> Option<String> {
    env.var(name).filter(|v| !v.trim().is_empty())
}

pub(super) fn number(env: &impl Env, name: &str, default: u64) -> Result<u64, ConfigError> {
    match optional(env, name) {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse()
            .map_err(|_| ConfigError::new(name, format!("must be a whole number, got {v:?}"))),
    }
}

pub(super) fn positive(env: &impl Env, name: &str, default: u64) -> Result<u64, ConfigError> {
    match number(env, name, default)? {
        0 => Err(ConfigError::new(name, "must be at least 1")),
        value => Ok(value),
    }
}

pub(super) fn secs(env: &impl Env, name: &str, default: u64) -> Result<Duration, ConfigError> {
    positive(env, name, default).map(Duration::from_secs)
}

pub(super) fn ca_file(env: &impl Env) -> Option<PathBuf> {
    optional(env, standin_remote::tls::AGENT_CA_FILE).map(PathBuf::from)
}

/// A comma-separated list, each item trimmed, blank ones dropped.
pub(super) fn list(env: &impl Env, name: &str) -> Vec<String> {
    let text = optional(env, name).unwrap_or_default();
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `true` or `false`, default `false`.
pub(super) fn boolean(env: &impl Env, name: &str) -> Result<bool, ConfigError> {
    match optional(env, name).as_deref().map(str::trim) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(ConfigError::new(
            name,
            format!("must be true or false, got {other:?}"),
        )),
    }
}

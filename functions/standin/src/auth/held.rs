//! Every credential value this process has held (secrets read, tokens fetched, the
//! agents' roles' keys), kept where the log lines can see them: no line carries one,
//! not even one an agent echoed back in an error message. Bounded in two lists, so
//! values that change at every fetch (tokens, assumed keys) never push out the secrets:
//! an agent that refuses every call (a fresh token each time) cannot flush them.

use std::sync::Mutex;

/// Secrets kept at once (a process reads a few per agent, 256 at most in its cache).
const MAX_SECRETS: usize = 512;
/// Tokens and assumed keys kept at once, the newest.
const MAX_ROLLING: usize = 128;
/// Shorter values are not looked for: they would match ordinary text.
pub const MIN_HELD_LEN: usize = 8;

static SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static ROLLING: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Remembers a secret's value (read from the store), as `with_members` gives it.
pub fn remember(value: &str) {
    keep(&SECRETS, MAX_SECRETS, value);
}

/// Remembers a value that changes at every fetch: a token, an assumed key.
pub fn remember_fleeting(value: &str) {
    keep(&ROLLING, MAX_ROLLING, value);
}

/// `value` without a secret file's line end, and each string inside it when it is a JSON
/// object (a password, a PEM key).
pub fn with_members(value: &str) -> Vec<String> {
    let trimmed = |v: &str| v.trim_end_matches(['\r', '\n']).to_owned();
    let mut values = vec![trimmed(value)];
    if let Ok(serde_json::Value::Object(members)) = serde_json::from_str(value) {
        values.extend(members.values().filter_map(|v| v.as_str()).map(trimmed));
    }
    values
}

fn keep(list: &Mutex<Vec<String>>, max: usize, value: &str) {
    let Ok(mut held) = list.lock() else {
        return;
    };
    for value in with_members(value) {
        if value.len() >= MIN_HELD_LEN && !held.contains(&value) {
            if held.len() >= max {
                held.remove(0);
            }
            held.push(value);
        }
    }
}

/// Every value remembered.
pub fn values() -> Vec<String> {
    let mut all = SECRETS.lock().map(|held| held.clone()).unwrap_or_default();
    all.extend(ROLLING.lock().map(|held| held.clone()).unwrap_or_default());
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleeting_values_never_push_out_the_secrets() {
        remember("a-secret-read-from-the-store");
        for n in 0..(MAX_ROLLING * 3) {
            remember_fleeting(&format!("token-number-{n:06}"));
        }
        let held = values();
        assert!(held.iter().any(|v| v == "a-secret-read-from-the-store"));
        assert!(
            held.iter()
                .any(|v| v == &format!("token-number-{:06}", MAX_ROLLING * 3 - 1))
        );
        assert!(
            !held.iter().any(|v| v == "token-number-000000"),
            "the oldest token went"
        );
    }
}

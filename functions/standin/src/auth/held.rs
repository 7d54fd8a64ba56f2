//! Every credential value this process has held (secrets read, tokens fetched, the
//! agents' roles' keys), kept where the log lines can see them: no line carries one,
//! not even one an agent echoed back in an error message. Bounded; the newest kept.

use std::sync::Mutex;

/// Values kept at once, past which the oldest go (a process holds a few per agent).
const MAX_HELD: usize = 256;
/// Shorter values are not looked for: they would match ordinary text.
pub const MIN_HELD_LEN: usize = 8;

static HELD: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Remembers `value`, and each string inside it when it is a JSON object (a password,
/// a PEM key), without a secret file's line end.
pub fn remember(value: &str) {
    let mut values = vec![value.trim_end_matches(['\r', '\n']).to_owned()];
    if let Ok(serde_json::Value::Object(members)) = serde_json::from_str(value) {
        values.extend(
            members
                .values()
                .filter_map(|v| v.as_str())
                .map(|v| v.trim_end_matches(['\r', '\n']).to_owned()),
        );
    }
    let Ok(mut held) = HELD.lock() else {
        return;
    };
    for value in values {
        if value.len() >= MIN_HELD_LEN && !held.contains(&value) {
            if held.len() >= MAX_HELD {
                held.remove(0);
            }
            held.push(value);
        }
    }
}

/// Every value remembered.
pub fn values() -> Vec<String> {
    HELD.lock().map(|held| held.clone()).unwrap_or_default()
}

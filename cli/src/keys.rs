//! `standin keys`: the A2A front's keys, for parents that cannot sign (docs/a2a-front.md).
//! A key is printed once, when it is issued; the stack keeps only its digest.

use serde_json::{Value, json};
use standin_wire::{IssuedKeyView, KeyView, KeysPage, is_key_id};

use crate::control::{ControlClient, decode, judge};
use crate::error::CliError;

impl ControlClient {
    /// Issues a key named `name`, for `agents` (every agent when empty).
    pub async fn create_key(
        &self,
        name: &str,
        agents: &[String],
    ) -> Result<IssuedKeyView, CliError> {
        let mut body = json!({});
        if !name.is_empty() {
            body["name"] = Value::String(name.to_owned());
        }
        if !agents.is_empty() {
            body["agents"] = json!(agents);
        }
        decode(judge(self.call("POST", "/keys", Some(&body)).await?, "")?)
    }

    /// Every key issued and not revoked (the API pages; this follows them).
    pub async fn keys(&self) -> Result<Vec<KeyView>, CliError> {
        let mut all = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let path = match &next {
                Some(after) => format!("/keys?after={}", key_id(after)?),
                None => "/keys".to_owned(),
            };
            let page: KeysPage = decode(judge(self.call("GET", &path, None).await?, "")?)?;
            all.extend(page.keys);
            match page.next {
                Some(after) if !after.is_empty() => next = Some(after),
                _ => break,
            }
        }
        Ok(all)
    }

    /// Revokes the key `id`: the keyed door refuses it from the next request on.
    pub async fn revoke_key(&self, id: &str) -> Result<(), CliError> {
        let answer = self
            .call("DELETE", &format!("/keys/{}", key_id(id)?), None)
            .await?;
        if answer.status == 404 {
            return Err(CliError::Refused(format!(
                "no key {id:?}: `standin keys list` shows the keys there are"
            )));
        }
        judge(answer, "").map(drop)
    }
}

/// A key's id goes into the path as it is: the 16 hex digits `standin keys list` shows.
/// A whole key given by mistake is refused without being sent anywhere.
fn key_id(id: &str) -> Result<&str, CliError> {
    if is_key_id(id) {
        Ok(id)
    } else {
        Err(CliError::Invalid {
            field: "key id".into(),
            problem: "must be the 16 hex digits `standin keys list` shows".into(),
        })
    }
}

/// The keys as a table.
pub fn print_keys(keys: &[KeyView]) {
    if keys.is_empty() {
        println!("no keys: `standin keys create` issues one");
        return;
    }
    println!("{:<17} {:<25} {:<24} AGENTS", "KEY ID", "CREATED", "NAME");
    for key in keys {
        let agents = key
            .agents
            .as_ref()
            .map_or_else(|| "(every agent)".to_owned(), |a| a.join(","));
        println!(
            "{:<17} {:<25} {:<24} {agents}",
            key.key_id, key.created_at, key.name
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_key_id_goes_into_the_path() {
        assert_eq!(key_id("0123456789abcdef").ok(), Some("0123456789abcdef"));
        let whole = format!("sik_0123456789abcdef_{}", "0".repeat(64));
        for wrong in ["", "../keys", "0123", "0123456789ABCDEF", whole.as_str()] {
            assert!(key_id(wrong).is_err(), "{wrong}");
        }
    }
}

//! The POST to a parent's webhook: its address held to the agents' reach rules (no
//! private address unless the deployment allows private agents), through the agents'
//! client (no redirect followed), each event of the note in turn.

use standin_remote::check_reach;
use standin_remote::front::webhook::{self, Credentials};

use super::WebhookPoster;
use crate::row::Webhook;
use standin_wire::ParentNote;

pub struct HttpWebhooks {
    http: reqwest::Client,
    allow_private: bool,
}

impl HttpWebhooks {
    pub fn new(http: reqwest::Client, allow_private: bool) -> Self {
        Self {
            http,
            allow_private,
        }
    }
}

impl WebhookPoster for HttpWebhooks {
    async fn post(
        &self,
        hook: &Webhook,
        context: Option<&str>,
        note: &ParentNote,
    ) -> Result<(), String> {
        check_reach(&hook.url, "the webhook", self.allow_private)
            .await
            .map_err(|e| e.to_string())?;
        let note = serde_json::to_value(note).map_err(|e| format!("encode the note: {e}"))?;
        let credentials = Credentials {
            token: hook.token.as_ref().map(|t| t.expose()),
            authorization: hook.authorization.as_ref().map(|a| a.expose()),
        };
        for event in webhook::events(&note, context) {
            webhook::post(&self.http, &hook.url, &credentials, &event)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

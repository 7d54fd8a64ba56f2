//! `/standins/{id}/webhooks`: the parent's webhooks on a stand-in, set, listed and
//! removed, and a start's own `webhook`. A webhook set late is queued for delivery at
//! once, so the notes already written after its `after` reach it without waiting for the
//! next one.

use standin_wire::{WEBHOOK_ID_RULE, WebhookList, WebhookRequest, WebhookView, is_webhook_id};

use super::{ApiAnswer, Control, ControlError, Executions};
use standin::doorbell::Doorbell;
use standin::row::{MAX_WEBHOOKS, Row, RowStore, StoreError, Webhook, WebhookSecret, Webhooks};

fn view(id: &str, hook: &Webhook) -> WebhookView {
    WebhookView {
        webhook_id: id.to_owned(),
        url: hook.url.clone(),
        through: hook.through,
        has_token: hook.token.is_some(),
        has_authorization: hook.authorization.is_some(),
    }
}

fn no_delivery() -> ApiAnswer {
    ApiAnswer::error(
        501,
        "this deployment delivers no webhooks (its functions have no WEBHOOK_QUEUE_URL)",
    )
}

/// The webhook `request` asks for, its mark at `through`.
fn webhook_of(request: WebhookRequest, through: u64) -> Webhook {
    let mut hook = Webhook::new(request.url, through);
    hook.token = request.token.map(WebhookSecret::new);
    hook.authorization = request.authorization.map(WebhookSecret::new);
    hook
}

impl<S: RowStore + Webhooks, D: Doorbell, E: Executions> Control<'_, S, D, E> {
    /// A start's `webhook`, checked, with its id (the stand-in's unless it names one):
    /// every note from the first unless it says `after`. `Err`: the answer refusing it.
    pub(super) async fn start_webhook(
        &self,
        task_id: &str,
        request: WebhookRequest,
    ) -> Result<(String, Webhook), ApiAnswer> {
        if self.webhooks.is_none() {
            return Err(no_delivery());
        }
        let id = request
            .webhook_id
            .clone()
            .unwrap_or_else(|| task_id.to_owned());
        if !is_webhook_id(&id) {
            return Err(ApiAnswer::error(
                400,
                format!(
                    "webhook.webhook_id: {WEBHOOK_ID_RULE} (the stand-in's id is not one: name it)"
                ),
            ));
        }
        self.webhook_reach("webhook.url", &request.url)
            .await
            .map_err(|refused| ApiAnswer::error(400, refused))?;
        let after = request.after.unwrap_or(0);
        Ok((id, webhook_of(request, after)))
    }

    /// A start sent again whose webhook the stand-in lacks (a first start without one,
    /// or with another id): it is set now, every note from its `after`. None: all is
    /// well; else the answer refusing it.
    pub(super) async fn start_webhook_again(
        &self,
        existing: &Row,
        id: &str,
        hook: &Webhook,
    ) -> Result<Option<ApiAnswer>, ControlError> {
        let Some(queue) = self.webhooks else {
            return Ok(Some(no_delivery()));
        };
        if existing.webhooks.contains_key(id) {
            return Ok(None);
        }
        let task_id = existing.task_id.as_str();
        match self.store.set_webhook(task_id, id, hook).await {
            Ok(row) => Ok(self.queue_due(queue, task_id, hook, row.seq, "set").await),
            Err(StoreError::Refused(_)) => Ok(Some(ApiAnswer::error(
                409,
                format!("stand-in {task_id} has {MAX_WEBHOOKS} webhooks already: delete one first"),
            ))),
            Err(err) => Err(err.into()),
        }
    }

    pub(super) async fn set_webhook(
        &self,
        task_id: &str,
        webhook_id: &str,
        body: &serde_json::Value,
    ) -> Result<ApiAnswer, ControlError> {
        let Some(queue) = self.webhooks else {
            return Ok(no_delivery());
        };
        if !is_webhook_id(webhook_id) {
            return Ok(ApiAnswer::error(
                400,
                format!("webhook_id: {WEBHOOK_ID_RULE}"),
            ));
        }
        let request = match WebhookRequest::parse(body) {
            Ok(request) => request,
            Err(refused) => return Ok(ApiAnswer::error(400, refused.0)),
        };
        if let Err(refused) = self.webhook_reach("url", &request.url).await {
            return Ok(ApiAnswer::error(400, refused));
        }
        let Some(row) = self.store.get(task_id).await? else {
            return Ok(ApiAnswer::error(404, format!("no stand-in {task_id}")));
        };
        // No later than the latest note: a mark ahead of the log would skip notes.
        let mut through = request.after.unwrap_or(row.seq).min(row.seq);
        let kept = row.webhooks.get(webhook_id);
        // The same webhook set again (an A2A client sends its config with every message)
        // never skips a note it has not had, and changes nothing when nothing changed: a
        // write would stop the delivery running for it (its marks are the old version's).
        if let Some(kept) = kept.filter(|kept| kept.url == request.url) {
            through = through.min(kept.through);
            let same_secrets = kept.token.as_ref().map(WebhookSecret::expose)
                == request.token.as_deref()
                && kept.authorization.as_ref().map(WebhookSecret::expose)
                    == request.authorization.as_deref();
            if same_secrets && through == kept.through {
                return Ok(self
                    .queue_due(queue, task_id, kept, row.seq, "again")
                    .await
                    .unwrap_or_else(|| ApiAnswer::of(200, view(webhook_id, kept))));
            }
        }
        let hook = webhook_of(request, through);
        let row: Row = match self.store.set_webhook(task_id, webhook_id, &hook).await {
            Ok(row) => row,
            Err(StoreError::NotFound(_)) => {
                return Ok(ApiAnswer::error(404, format!("no stand-in {task_id}")));
            }
            Err(StoreError::Refused(_)) => {
                return Ok(ApiAnswer::error(
                    409,
                    format!(
                        "stand-in {task_id} has {MAX_WEBHOOKS} webhooks already: delete one first"
                    ),
                ));
            }
            Err(err) => return Err(err.into()),
        };
        Ok(self
            .queue_due(queue, task_id, &hook, row.seq, "set")
            .await
            .unwrap_or_else(|| ApiAnswer::of(200, view(webhook_id, &hook))))
    }

    /// Queues the delivery of what `hook` has due (notes after its mark, up to `seq`):
    /// asked for, or written between the read and the write. A send that fails is a 503
    /// (the webhook is set, and the same PUT sent again queues it); None when all is well.
    async fn queue_due(
        &self,
        queue: &dyn standin::webhook::DeliveryQueue,
        task_id: &str,
        hook: &Webhook,
        seq: u64,
        kind: &str,
    ) -> Option<ApiAnswer> {
        if hook.through >= seq {
            return None;
        }
        let why = format!("{kind}:{}:{seq}", hook.version);
        let err = queue.queue(task_id, &why).await.err()?;
        tracing::warn!(task_id, error = %err, "a webhook set but not queued for delivery");
        Some(ApiAnswer::error(
            503,
            "the webhook is set, but its delivery could not be queued; send the same request again",
        ))
    }

    pub(super) async fn list_webhooks(&self, task_id: &str) -> Result<ApiAnswer, ControlError> {
        let Some(row) = self.store.get(task_id).await? else {
            return Ok(ApiAnswer::error(404, format!("no stand-in {task_id}")));
        };
        let webhooks = row
            .webhooks
            .iter()
            .map(|(id, hook)| view(id, hook))
            .collect();
        Ok(ApiAnswer::of(200, WebhookList { webhooks }))
    }

    pub(super) async fn delete_webhook(
        &self,
        task_id: &str,
        webhook_id: &str,
    ) -> Result<ApiAnswer, ControlError> {
        match self.store.delete_webhook(task_id, webhook_id).await {
            Ok(true) => Ok(ApiAnswer::of(
                200,
                serde_json::json!({"task_id": task_id, "webhook_id": webhook_id, "deleted": true}),
            )),
            Ok(false) => Ok(ApiAnswer::error(
                404,
                format!("stand-in {task_id} has no webhook {webhook_id}"),
            )),
            Err(StoreError::NotFound(_)) => {
                Ok(ApiAnswer::error(404, format!("no stand-in {task_id}")))
            }
            Err(err) => Err(err.into()),
        }
    }

    /// A webhook is held to what an agent is: no AWS endpoint, none of the stack's own,
    /// https unless private addresses are allowed, and no private address then.
    async fn webhook_reach(&self, field: &str, url: &str) -> Result<(), String> {
        self.agents
            .rules()
            .check_webhook(field, url)
            .map_err(|e| e.to_string())?;
        if !self.allow_private && !url.starts_with("https://") {
            return Err(format!(
                "{field}: must be https (this deployment does not allow private agents)"
            ));
        }
        standin_remote::check_reach(url, field, self.allow_private)
            .await
            .map_err(|e| e.to_string())
    }
}

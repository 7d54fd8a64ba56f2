//! `/agents`: the registry's entries, added, shown, listed and removed at run time. Only
//! the registry's own entries change here; the stack's are its deployments'.

use serde_json::{Value, json};
use standin_wire::{AgentView, AgentsPage, CardView, Removed, SkillView};

use super::{ApiAnswer, Control, ControlError, Executions};
use crate::cards::Described;
use standin::agents::AgentSpec;
use standin::doorbell::Doorbell;
use standin::registry::{AGENTS_PAGE, ChangeError, Source};
use standin::row::RowStore;

fn view(spec: &AgentSpec, source: Source) -> AgentView {
    AgentView {
        source: match source {
            Source::Stack => "stack",
            Source::Registry => "registry",
        }
        .to_owned(),
        agent: spec.to_entry(),
        card: None,
    }
}

fn card_view(described: Described) -> CardView {
    match described {
        Ok(profile) => CardView {
            name: profile.name,
            description: profile.description,
            skills: profile
                .skills
                .into_iter()
                .map(|skill| SkillView {
                    id: skill.id,
                    name: skill.name,
                    description: skill.description,
                    tags: skill.tags,
                })
                .collect(),
            error: None,
        },
        Err(why) => CardView {
            error: Some(why),
            ..CardView::default()
        },
    }
}

/// A put that changed nothing, as its answer: 400 naming the field, 409 for the stack's.
fn changed_not(err: ChangeError) -> Result<ApiAnswer, ControlError> {
    match err {
        ChangeError::Invalid(err) => Ok(ApiAnswer::of(
            400,
            json!({"error": err.to_string(), "field": err.field}),
        )),
        err @ ChangeError::StackOwned(_) => Ok(ApiAnswer::error(409, err.to_string())),
        ChangeError::Registry(err) => Err(err.into()),
    }
}

impl<S: RowStore, D: Doorbell, E: Executions> Control<'_, S, D, E> {
    pub(super) async fn put_agent(
        &self,
        id: &str,
        body: &Value,
    ) -> Result<ApiAnswer, ControlError> {
        match self.agents.put(id, body).await {
            Ok(spec) => Ok(ApiAnswer::of(200, view(&spec, Source::Registry))),
            Err(err) => changed_not(err),
        }
    }

    pub(super) async fn put_agents(&self, body: &Value) -> Result<ApiAnswer, ControlError> {
        match self.agents.put_all(body).await {
            Ok(specs) => {
                let agents = specs
                    .iter()
                    .map(|spec| view(spec, Source::Registry))
                    .collect();
                Ok(ApiAnswer::of(200, AgentsPage { agents, next: None }))
            }
            Err(err) => changed_not(err),
        }
    }

    pub(super) async fn show_agent(&self, id: &str) -> Result<ApiAnswer, ControlError> {
        Ok(match self.agents.agent_now(id).await? {
            Some((spec, source)) => {
                let mut views = self.described(&[(spec, source)]).await;
                ApiAnswer::of(200, views.pop())
            }
            None => ApiAnswer::error(404, format!("no agent {id:?}")),
        })
    }

    pub(super) async fn remove_agent(&self, id: &str) -> Result<ApiAnswer, ControlError> {
        match self.agents.remove(id).await {
            Ok(true) => Ok(ApiAnswer::of(
                200,
                Removed {
                    id: id.to_owned(),
                    removed: true,
                },
            )),
            Ok(false) => Ok(ApiAnswer::error(
                404,
                format!("no agent {id:?} in the registry"),
            )),
            Err(err @ ChangeError::StackOwned(_)) => Ok(ApiAnswer::error(409, err.to_string())),
            Err(ChangeError::Invalid(err)) => Ok(ApiAnswer::error(400, err.to_string())),
            Err(ChangeError::Registry(err)) => Err(err.into()),
        }
    }

    pub(super) async fn list_agents(&self, after: Option<&str>) -> Result<ApiAnswer, ControlError> {
        let (agents, next) = self.agents.list(after, AGENTS_PAGE).await?;
        let agents = self.described(&agents).await;
        Ok(ApiAnswer::of(200, AgentsPage { agents, next }))
    }

    /// The agents' views, each with what its card says when the deployment reads cards.
    async fn described(&self, agents: &[(AgentSpec, Source)]) -> Vec<AgentView> {
        let mut views: Vec<_> = agents
            .iter()
            .map(|(spec, source)| view(spec, *source))
            .collect();
        if let Some(cards) = self.cards {
            let specs: Vec<_> = agents.iter().map(|(spec, _)| spec).collect();
            for (view, described) in views.iter_mut().zip(cards.describe(&specs).await) {
                view.card = Some(card_view(described));
            }
        }
        views
    }
}

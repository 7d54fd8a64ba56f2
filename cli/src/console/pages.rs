//! The pages: each reads what it shows through the control API and fills its template.
//! A reply or a cancel is the API's own request; what the API refuses is shown beside the
//! field it names.

use std::sync::Arc;

use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::Console;
use super::chart::timeline;
use super::respond::{failed, render};
use super::views::{self, Choice, ErrorPage, ReplyForm, StandInPage};
use crate::CliError;
use crate::parts::parts_of;

pub(crate) async fn home() -> Redirect {
    Redirect::to("/standins")
}

#[derive(Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    state: String,
    #[serde(default)]
    agent: String,
    #[serde(default)]
    after: String,
}

/// Stand-ins, a page of the API's at a time, of one agent and in one state when asked.
pub(crate) async fn list(
    State(console): State<Arc<Console>>,
    Query(query): Query<ListQuery>,
) -> Response {
    let control = &console.control;
    let (page, mut agent_ids) = tokio::join!(
        control.list_page(Some(&query.after), Some(&query.agent)),
        console.agent_ids()
    );
    // The agent asked for stays chosen, even one the list of agents no longer has.
    if !query.agent.is_empty() && !agent_ids.contains(&query.agent) {
        agent_ids.push(query.agent.clone());
    }
    let page = match page {
        Ok(page) => page,
        Err(err) => return failed(&console, "The stand-ins did not read", &err),
    };
    let now = super::time::now_millis();
    let mut standins = page.standins;
    // A page of all agents is a scan, in no order: newest first within it.
    standins.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    let rows = standins
        .iter()
        .filter(|row| {
            query.state.is_empty() || row.state.is_some_and(|s| s.as_str() == query.state)
        })
        .map(|row| views::list_row(row, now))
        .collect();
    let choices = |values: Vec<String>, chosen: &str, label: fn(&str) -> String| {
        values
            .into_iter()
            .map(|value| Choice {
                label: label(&value),
                selected: value == chosen,
                value,
            })
            .collect()
    };
    let next = page.next.filter(|n| !n.is_empty()).map(|after| {
        format!(
            "/standins?after={}&agent={}&state={}",
            views::segment(&after),
            views::segment(&query.agent),
            views::segment(&query.state)
        )
    });
    render(&views::ListPage {
        stack: console.stack.clone(),
        rows,
        states: choices(
            views::STATES.map(str::to_owned).to_vec(),
            &query.state,
            |s| {
                crate::events::short_state(s)
                    .replace('_', " ")
                    .to_lowercase()
            },
        ),
        agents: choices(agent_ids, &query.agent, str::to_owned),
        next,
        filtered: !query.state.is_empty() || !query.agent.is_empty(),
    })
}

#[derive(Deserialize)]
pub(crate) struct StandInQuery {
    #[serde(default)]
    sent: String,
}

pub(crate) async fn stand_in(
    State(console): State<Arc<Console>>,
    Path(id): Path<String>,
    Query(query): Query<StandInQuery>,
) -> Response {
    let notice = match query.sent.as_str() {
        "reply" => Some("Your reply was taken: the agent gets it at the stand-in's next wake."),
        "cancel" => Some("The cancel was taken: the final note says how it ended."),
        _ => None,
    };
    let mut page = match stand_in_page(&console, &id).await {
        Ok(page) => page,
        Err(err) => return failed(&console, "This stand-in did not read", &err),
    };
    page.notice = notice.map(str::to_owned);
    render(&page)
}

async fn stand_in_page(console: &Console, id: &str) -> Result<StandInPage, CliError> {
    let control = &console.control;
    let (status, notes, turns, artifacts) = tokio::join!(
        control.status(id),
        control.notes(id, 0),
        control.turns(id),
        control.artifacts(id)
    );
    let (status, notes) = (status?, notes?);
    // A stand-in shown without its turns or artifacts still tells the operator most.
    let turns = turns.unwrap_or_default();
    let artifacts = artifacts.map(|page| page.artifacts).unwrap_or_default();
    let state = status
        .summary
        .state
        .map_or("-", |s| crate::events::short_state(s.as_str()))
        .to_owned();
    Ok(StandInPage {
        stack: console.stack.clone(),
        id: id.to_owned(),
        href: format!("/standins/{}", views::segment(id)),
        state_class: super::chart::css_class(&state),
        state,
        closed: status.summary.closed,
        facts: views::facts(&status),
        chart: timeline(&notes, &turns),
        entries: views::conversation(id, &notes, &turns),
        artifacts: views::artifact_rows(id, &artifacts),
        reply: ReplyForm {
            reply_id: format!("console-{}", hex::encode(rand::random::<[u8; 12]>())),
            ..ReplyForm::default()
        },
        cancel: views::CancelForm::default(),
        notice: None,
        alert: None,
        token: console.guard.token().to_owned(),
    })
}

#[derive(Deserialize)]
pub(crate) struct ReplyFields {
    #[serde(default)]
    token: String,
    #[serde(default)]
    reply_id: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    data: String,
}

pub(crate) async fn reply(
    State(console): State<Arc<Console>>,
    Path(id): Path<String>,
    Form(fields): Form<ReplyFields>,
) -> Response {
    if !console.guard.token_matches(&fields.token) {
        return stale(&console);
    }
    let data: Vec<String> = Some(fields.data.trim().to_owned())
        .filter(|d| !d.is_empty())
        .into_iter()
        .collect();
    let reply_id = Some(fields.reply_id.as_str()).filter(|r| !r.is_empty());
    let sent = async {
        let parts = console.control.ready(parts_of(&[], &data)?).await?;
        let control = &console.control;
        control.reply_as(&id, &fields.text, parts, reply_id).await
    }
    .await;
    let Err(err) = sent else {
        return Redirect::to(&format!("/standins/{}?sent=reply", views::segment(&id)))
            .into_response();
    };
    let mut form = ReplyForm {
        reply_id: fields.reply_id,
        text: fields.text,
        data: fields.data,
        ..ReplyForm::default()
    };
    match &err {
        CliError::Invalid { field, problem } if field == "text" => {
            form.text_error = Some(problem.clone());
        }
        CliError::Invalid { field, problem } if field == "--data" || field.starts_with("parts") => {
            form.data_error = Some(problem.clone());
        }
        other => form.error = Some(other.to_string()),
    }
    refused(&console, &id, &err, |page| page.reply = form).await
}

#[derive(Deserialize)]
pub(crate) struct CancelFields {
    #[serde(default)]
    token: String,
    #[serde(default)]
    reason: String,
}

pub(crate) async fn cancel(
    State(console): State<Arc<Console>>,
    Path(id): Path<String>,
    Form(fields): Form<CancelFields>,
) -> Response {
    if !console.guard.token_matches(&fields.token) {
        return stale(&console);
    }
    let reason = Some(fields.reason.trim()).filter(|r| !r.is_empty());
    match console.control.cancel(&id, reason).await {
        Ok(()) => {
            Redirect::to(&format!("/standins/{}?sent=cancel", views::segment(&id))).into_response()
        }
        Err(err) => {
            let form = views::CancelForm {
                reason: fields.reason,
                error: Some(err.to_string()),
            };
            refused(&console, &id, &err, |page| page.cancel = form).await
        }
    }
}

/// The stand-in's page again, with what the API refused shown on its form.
async fn refused(
    console: &Console,
    id: &str,
    err: &CliError,
    show: impl FnOnce(&mut StandInPage),
) -> Response {
    let status = match err {
        CliError::Ended { .. } => StatusCode::CONFLICT,
        CliError::Invalid { .. } | CliError::Refused(_) => StatusCode::BAD_REQUEST,
        CliError::Api { status, .. } if (400..500).contains(status) => {
            StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_REQUEST)
        }
        _ => StatusCode::BAD_GATEWAY,
    };
    match stand_in_page(console, id).await {
        Ok(mut page) => {
            show(&mut page);
            // An ended stand-in shows no forms: what was refused is said at the top.
            if page.closed {
                page.alert = Some(err.to_string());
            }
            (status, render(&page)).into_response()
        }
        Err(read) => failed(console, "This stand-in did not read", &read),
    }
}

pub(crate) async fn artifact(
    State(console): State<Arc<Console>>,
    Path((id, artifact_id)): Path<(String, String)>,
) -> Response {
    match super::parts::preview(&console, &id, &artifact_id).await {
        Ok(page) => render(&page),
        Err(err) => failed(&console, "This artifact did not read", &err),
    }
}

pub(crate) async fn agents(State(console): State<Arc<Console>>) -> Response {
    match console.control.agents().await {
        Ok(all) => render(&views::AgentsPage {
            stack: console.stack.clone(),
            rows: all.iter().map(views::agent_row).collect(),
        }),
        Err(err) => failed(&console, "The agents did not read", &err),
    }
}

fn stale(console: &Console) -> Response {
    let page = ErrorPage {
        stack: console.stack.clone(),
        title: "This form is from another console".to_owned(),
        message: "It was not sent. Reload the page (each run of `standin console` gives its forms a new token) and send it again.".to_owned(),
    };
    (StatusCode::FORBIDDEN, render(&page)).into_response()
}

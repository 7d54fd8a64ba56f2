//! Each function is allowed exactly the AWS calls it makes. The test stack logs the IAM
//! action of every call (`RecordAwsCalls=true`); run after every other test
//! (`scripts/test` runs it last, with the `observed-calls` feature), this reads those
//! logs and checks each function's calls against its policy in `template.yaml`: a call
//! the policy does not allow would be an `AccessDenied` on AWS (LocalStack does not
//! enforce IAM), and an action no call used is a grant to take away.
//!
//! Excepted from "used": the task-token actions (a token names no resource, so they are
//! granted as a set and a test run need not need each), and the artifact actions of a
//! function that collects artifacts (granted as the capability's set: which of them an
//! invocation needs depends on what the agent sends, e.g. a delete only when an artifact
//! is replaced). A function granted them must still have been seen to use one. And
//! `s3:ListBucket`, which no call makes: it lets S3 answer a read of a missing key with
//! 404, not 403, so a function that reads the bucket tells "absent" from "refused"; it
//! is granted only beside `s3:GetObject`.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use standin_integration::stack::Stack;

const TEMPLATE: &str = include_str!("../../template.yaml");
const TASK_TOKEN_ACTIONS: [&str; 3] = [
    "states:SendTaskSuccess",
    "states:SendTaskFailure",
    "states:SendTaskHeartbeat",
];
const LETS_ABSENT_READ_AS_404: &str = "s3:ListBucket";
const ARTIFACT_ACTIONS: [&str; 4] = [
    "s3:GetObject",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
];

/// A resource of the template, from its name to the next resource.
fn resource<'a>(name: &str) -> &'a str {
    let start = TEMPLATE
        .find(&format!("\n  {name}:\n"))
        .unwrap_or_else(|| panic!("{name} in the template"));
    let body = &TEMPLATE[start + 1..];
    let end = body
        .match_indices("\n  ")
        .find(|(i, _)| body[i + 3..].starts_with(|c: char| c.is_ascii_alphabetic()))
        .map_or(body.len(), |(i, _)| i);
    &body[..end]
}

/// One permission: an IAM action, and the table it is granted on (DynamoDB actions are
/// granted per table; the other services' are checked by action).
type Permission = (String, Option<String>);

/// The permissions a resource's policies grant: each `Action: x` or `Action: [x, y]`
/// with its statement's `Resource`, a table when that is `!GetAtt <Table>.Arn`.
fn granted(block: &str) -> BTreeSet<Permission> {
    let policies = &block[block.find("Policies:").unwrap_or(block.len())..];
    let starts: Vec<usize> = policies
        .match_indices("Action:")
        .map(|(at, _)| at)
        .collect();
    let mut granted = BTreeSet::new();
    for (n, &at) in starts.iter().enumerate() {
        let statement = &policies[at..starts.get(n + 1).copied().unwrap_or(policies.len())];
        let rest = statement["Action:".len()..].trim_start();
        let list = if let Some(inner) = rest.strip_prefix('[') {
            &inner[..inner.find(']').expect("a closed list")]
        } else {
            &rest[..rest.find([',', '}', '\n']).unwrap_or(rest.len())]
        };
        // A table's own ARN, or one of its indexes' (`!Sub "${Table.Arn}/index/name"`):
        // a call through an index is logged against its table.
        let table = ["Resource: !GetAtt ", "Resource: !Sub \"${"]
            .iter()
            .find_map(|form| statement.find(form).map(|r| &statement[r + form.len()..]))
            .and_then(|r| r.split(".Arn").next())
            .filter(|name| tables().contains(name))
            .map(str::to_owned);
        assert!(
            !list.trim().is_empty(),
            "a statement without actions: {statement}"
        );
        for action in list.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            granted.insert((action.to_owned(), table.clone()));
        }
    }
    granted
}

/// Every resource of the template of a type, by logical id.
fn resources_of(kind: &str) -> Vec<&'static str> {
    let mut names = vec![];
    for (at, _) in TEMPLATE.match_indices("\n  ") {
        let Some(name) = TEMPLATE[at + 3..].split(':').next() else {
            continue;
        };
        if name.chars().all(|c| c.is_ascii_alphanumeric())
            && !name.is_empty()
            && TEMPLATE[at + 3..].starts_with(&format!("{name}:\n"))
            && resource(name).contains(&format!("Type: {kind}\n"))
        {
            names.push(name);
        }
    }
    names
}

fn tables() -> Vec<&'static str> {
    resources_of("AWS::DynamoDB::Table")
}

/// Every `AWS::Serverless::Function` of the template, by logical id.
fn functions() -> Vec<&'static str> {
    resources_of("AWS::Serverless::Function")
}

/// `s3:ListBucket` is excused from "used" (it only makes S3 answer a read of a missing key
/// with 404): so it is granted on the artifacts bucket alone, never on `*` or another.
#[test]
fn list_bucket_is_granted_on_the_artifacts_bucket_alone() {
    let grants: Vec<&str> = TEMPLATE
        .lines()
        .filter(|line| line.contains("s3:ListBucket"))
        .map(str::trim)
        .collect();
    assert!(
        !grants.is_empty(),
        "the functions that read the bucket may list it"
    );
    for grant in grants {
        assert_eq!(
            grant,
            "- { Effect: Allow, Action: s3:ListBucket, Resource: !GetAtt ArtifactsBucket.Arn }"
        );
    }
}

#[test]
fn the_template_parser_reads_both_forms_of_action() {
    let block = "Policies:\n  - { Effect: Allow, Action: sqs:SendMessage, Resource: !GetAtt ParentQueue.Arn }\n  - { Effect: Allow, Action: [dynamodb:GetItem, dynamodb:PutItem], Resource: !GetAtt NotesTable.Arn }\n  - { Effect: Allow, Action: dynamodb:Query, Resource: !Sub \"${Table.Arn}/index/by_agent\" }\n  - Effect: Allow\n    Action: states:StartExecution\n    Resource: !Sub x\n";
    let permission =
        |action: &str, table: Option<&str>| (action.to_owned(), table.map(str::to_owned));
    assert_eq!(
        granted(block).into_iter().collect::<Vec<_>>(),
        [
            permission("dynamodb:GetItem", Some("NotesTable")),
            permission("dynamodb:PutItem", Some("NotesTable")),
            permission("dynamodb:Query", Some("Table")),
            permission("sqs:SendMessage", None),
            permission("states:StartExecution", None),
        ]
    );
    assert!(functions().contains(&"NotifyFunction"), "{:?}", functions());
    assert_eq!(
        tables(),
        [
            "Table",
            "AgentsTable",
            "KeysTable",
            "TurnsTable",
            "NotesTable"
        ]
    );
}

/// The calls each function (by logical id) made, read from every stack `make test` ran
/// suites against (`STANDIN_E2E_STACKS`, comma-separated; default `standin`): its lanes
/// split the suites between stacks, and together they run every function.
#[tokio::test]
async fn every_function_may_make_the_calls_it_made_and_no_others() {
    let stacks = std::env::var("STANDIN_E2E_STACKS").unwrap_or_else(|_| "standin".to_owned());
    let mut observed: BTreeMap<String, BTreeSet<Permission>> = BTreeMap::new();
    for name in stacks.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        observe(&Stack::load(name).await, &mut observed).await;
    }
    judge(&observed);
}

/// Adds the calls the functions of `stack` logged to `observed`.
async fn observe(stack: &Stack, observed: &mut BTreeMap<String, BTreeSet<Permission>>) {
    let cfn = aws_sdk_cloudformation::Client::new(&stack.config);
    let resources = cfn
        .describe_stack_resources()
        .stack_name(&stack.name)
        .send()
        .await
        .expect("the stack's resources");
    let table_names: BTreeMap<&str, &str> = resources
        .stack_resources()
        .iter()
        .filter(|r| r.resource_type() == Some("AWS::DynamoDB::Table"))
        .filter_map(|r| Some((r.physical_resource_id()?, r.logical_resource_id()?)))
        .collect();
    for r in resources.stack_resources() {
        if r.resource_type() != Some("AWS::Lambda::Function") {
            continue;
        }
        let (logical, physical) = (
            r.logical_resource_id().unwrap(),
            r.physical_resource_id().unwrap(),
        );
        let lines = stack
            .log_events(
                &format!("/aws/lambda/{physical}"),
                None,
                None,
                Some("aws_call"),
            )
            .await
            .expect("the function's logs");
        let calls = observed.entry(logical.to_owned()).or_default();
        for (_, line) in lines {
            let Ok(json) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if let Some(action) = json["aws_call"].as_str() {
                let table = json["table"].as_str().filter(|t| !t.is_empty()).map(|t| {
                    table_names.get(t).map_or_else(
                        || format!("a table not in the stack: {t}"),
                        |l| (*l).to_owned(),
                    )
                });
                calls.insert((action.to_owned(), table));
            }
        }
    }
}

/// Every function's calls against its policy: none it may not make, none it may make
/// but never did.
fn judge(observed: &BTreeMap<String, BTreeSet<Permission>>) {
    let mut problems = vec![];
    for function in functions() {
        let allowed = granted(resource(function));
        let made = observed.get(function).cloned().unwrap_or_default();
        for (action, table) in made.difference(&allowed) {
            let on = table
                .as_deref()
                .map(|t| format!(" on {t}"))
                .unwrap_or_default();
            problems.push(format!(
                "{function} calls {action}{on}, which its policy does not allow"
            ));
        }
        assert!(
            !made.is_empty(),
            "{function}: no call recorded; is RecordAwsCalls on?"
        );
        let collects = allowed.iter().any(|(a, _)| a == "s3:PutObject");
        if collects
            && !made
                .iter()
                .any(|(a, _)| ARTIFACT_ACTIONS.contains(&a.as_str()))
        {
            problems.push(format!(
                "{function} is allowed the artifact actions but used none"
            ));
        }
        let reads_the_bucket = allowed.iter().any(|(a, _)| a == "s3:GetObject");
        for (action, table) in allowed.difference(&made) {
            let artifact_set = collects && ARTIFACT_ACTIONS.contains(&action.as_str());
            let absent_as_404 = reads_the_bucket && action == LETS_ABSENT_READ_AS_404;
            if !TASK_TOKEN_ACTIONS.contains(&action.as_str()) && !artifact_set && !absent_as_404 {
                let on = table
                    .as_deref()
                    .map(|t| format!(" on {t}"))
                    .unwrap_or_default();
                problems.push(format!(
                    "{function} is allowed {action}{on} but never called it"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{problems:#?}\nobserved: {observed:#?}"
    );
}

//! The control API's contract: `api/control.openapi.json`, the document the template
//! deploys, read here so that the `standin` command and the tests check every request
//! they send and every answer they get against it.
//!
//! The check reads the part of OpenAPI 3.0's schema language the document uses (type,
//! properties, required, items, enum, nullable, `$ref`, allOf, anyOf, lengths,
//! minimum). A
//! schema that uses anything else is refused by name, so the document cannot promise
//! something this check silently skips.

use std::sync::LazyLock;

use serde_json::{Map, Value};

/// The document, as deployed.
pub const DOCUMENT: &str = include_str!("../../api/control.openapi.json");

static PARSED: LazyLock<Result<Value, String>> =
    LazyLock::new(|| serde_json::from_str(DOCUMENT).map_err(|e| e.to_string()));

/// Where a request or an answer breaks the contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    #[error("the control API's document does not read: {0}")]
    Document(String),
    #[error("the control API has no operation {method} {path}")]
    NoOperation { method: String, path: String },
    #[error("{method} {path} documents no answer {status}")]
    UndocumentedStatus {
        method: String,
        path: String,
        status: u16,
    },
    #[error("{what} does not fit the control API's document at {at}: {problem}")]
    Misfit {
        what: String,
        at: String,
        problem: String,
    },
}

/// The keywords [`check`] reads; `description` and `format` say nothing it could check.
pub const SCHEMA_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "nullable",
    "$ref",
    "allOf",
    "anyOf",
    "minLength",
    "maxLength",
    "minimum",
    "description",
    "format",
];

/// One operation of the document: its method, its path template and its definition.
#[derive(Debug, Clone, Copy)]
pub struct Operation<'a> {
    pub method: &'a str,
    pub template: &'a str,
    definition: &'a Value,
}

fn document() -> Result<&'static Value, ContractError> {
    PARSED
        .as_ref()
        .map_err(|e| ContractError::Document(e.clone()))
}

/// Every operation the document declares.
pub fn operations() -> Result<Vec<Operation<'static>>, ContractError> {
    let paths = document()?["paths"]
        .as_object()
        .ok_or_else(|| ContractError::Document("no paths".into()))?;
    Ok(paths
        .iter()
        .flat_map(|(template, item)| {
            item.as_object()
                .into_iter()
                .flatten()
                .map(move |(method, definition)| Operation {
                    method,
                    template,
                    definition,
                })
        })
        .collect())
}

/// The operation a request goes to; `path` is what follows the stage (`/standins/…`),
/// with or without a query.
pub fn operation(method: &str, path: &str) -> Result<Operation<'static>, ContractError> {
    let path = path.split('?').next().unwrap_or(path);
    let method = method.to_ascii_lowercase();
    operations()?
        .into_iter()
        .find(|op| op.method == method && matches_template(op.template, path))
        .ok_or_else(|| ContractError::NoOperation {
            method: method.to_ascii_uppercase(),
            path: path.to_owned(),
        })
}

fn matches_template(template: &str, path: &str) -> bool {
    let wanted: Vec<&str> = template.trim_matches('/').split('/').collect();
    let got: Vec<&str> = path.trim_matches('/').split('/').collect();
    wanted.len() == got.len()
        && wanted
            .iter()
            .zip(&got)
            .all(|(w, g)| (w.starts_with('{') && !g.is_empty()) || w == g)
}

/// Checks a request body against its operation's schema (no body where none is declared).
pub fn check_request(method: &str, path: &str, body: Option<&Value>) -> Result<(), ContractError> {
    let op = operation(method, path)?;
    let what = format!(
        "the body of {} {}",
        method.to_ascii_uppercase(),
        op.template
    );
    match (&op.definition["requestBody"], body) {
        (Value::Null, None) => Ok(()),
        (Value::Null, Some(_)) => Err(misfit(&what, "", "the operation takes no body")),
        (declared, None) if declared["required"] == true => {
            Err(misfit(&what, "", "the operation needs a body"))
        }
        (_, None) => Ok(()),
        (declared, Some(body)) => check(
            &declared["content"]["application/json"]["schema"],
            body,
            &what,
        ),
    }
}

/// Checks an answer against the schema its operation documents for `status`.
pub fn check_response(
    method: &str,
    path: &str,
    status: u16,
    body: &Value,
) -> Result<(), ContractError> {
    let op = operation(method, path)?;
    let documented = &op.definition["responses"][status.to_string()];
    if documented.is_null() {
        return Err(ContractError::UndocumentedStatus {
            method: method.to_ascii_uppercase(),
            path: op.template.to_owned(),
            status,
        });
    }
    let what = format!(
        "the {status} answer to {} {}",
        method.to_ascii_uppercase(),
        op.template
    );
    check(
        &documented["content"]["application/json"]["schema"],
        body,
        &what,
    )
}

/// Checks `value` against `schema` (resolving `$ref`s within the document).
pub fn check(schema: &Value, value: &Value, what: &str) -> Result<(), ContractError> {
    Checker { what }.check(schema, value, "$")
}

fn misfit(what: &str, at: &str, problem: impl Into<String>) -> ContractError {
    ContractError::Misfit {
        what: what.to_owned(),
        at: if at.is_empty() { "$".into() } else { at.into() },
        problem: problem.into(),
    }
}

struct Checker<'a> {
    what: &'a str,
}

impl Checker<'_> {
    fn fail(&self, at: &str, problem: impl Into<String>) -> ContractError {
        misfit(self.what, at, problem)
    }

    fn check(&self, schema: &Value, value: &Value, at: &str) -> Result<(), ContractError> {
        let Some(schema) = schema.as_object() else {
            return Err(self.fail(at, "the document has no schema here"));
        };
        if let Some(unknown) = schema
            .keys()
            .find(|k| !SCHEMA_KEYWORDS.contains(&k.as_str()))
        {
            return Err(self.fail(
                at,
                format!("the schema uses `{unknown}`, which this check does not read"),
            ));
        }
        if let Some(reference) = schema.get("$ref") {
            let resolved = resolve(reference).map_err(|problem| self.fail(at, problem))?;
            return self.check(resolved, value, at);
        }
        if value.is_null() && schema.get("nullable") == Some(&Value::Bool(true)) {
            return Ok(());
        }
        for part in schema
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.check(part, value, at)?;
        }
        if let Some(choices) = schema.get("anyOf").and_then(Value::as_array) {
            let mut misfits = vec![];
            for choice in choices {
                match self.check(choice, value, at) {
                    Ok(()) => {
                        misfits.clear();
                        break;
                    }
                    Err(err) => misfits.push(err.to_string()),
                }
            }
            if !misfits.is_empty() {
                return Err(self.fail(
                    at,
                    format!("fits none of its choices: {}", misfits.join("; ")),
                ));
            }
        }
        if let Some(kind) = schema.get("type").and_then(Value::as_str) {
            self.check_type(kind, value, at)?;
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            return Err(self.fail(
                at,
                format!(
                    "must be one of {}, got {value}",
                    Value::Array(allowed.clone())
                ),
            ));
        }
        if let Some(text) = value.as_str() {
            let chars = text.chars().count() as u64;
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && chars < min
            {
                let problem = if chars == 0 {
                    "must not be empty".to_owned()
                } else {
                    format!("must be at least {min} characters, got {chars}")
                };
                return Err(self.fail(at, problem));
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && chars > max
            {
                return Err(self.fail(at, format!("must be at most {max} characters, got {chars}")));
            }
        }
        if let (Some(min), Some(number)) = (
            schema.get("minimum").and_then(Value::as_f64),
            value.as_f64(),
        ) && number < min
        {
            return Err(self.fail(at, format!("must be at least {min}, got {number}")));
        }
        if let Some(object) = value.as_object() {
            self.check_object(schema, object, at)?;
        }
        if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
            for (i, item) in array.iter().enumerate() {
                self.check(items, item, &format!("{at}[{i}]"))?;
            }
        }
        Ok(())
    }

    fn check_type(&self, kind: &str, value: &Value, at: &str) -> Result<(), ContractError> {
        let fits = match kind {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            other => return Err(self.fail(at, format!("unknown type `{other}` in the document"))),
        };
        if fits {
            Ok(())
        } else {
            Err(self.fail(at, format!("must be of type {kind}, got {value}")))
        }
    }

    fn check_object(
        &self,
        schema: &Map<String, Value>,
        object: &Map<String, Value>,
        at: &str,
    ) -> Result<(), ContractError> {
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = name.as_str().unwrap_or_default();
            if !object.contains_key(name) {
                return Err(self.fail(&format!("{at}.{name}"), "is required"));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (name, property) in properties.into_iter().flatten() {
            if let Some(value) = object.get(name) {
                self.check(property, value, &format!("{at}.{name}"))?;
            }
        }
        Ok(())
    }
}

fn resolve(reference: &Value) -> Result<&'static Value, String> {
    let pointer = reference
        .as_str()
        .and_then(|r| r.strip_prefix('#'))
        .ok_or_else(|| format!("only references within the document are read: {reference}"))?;
    let doc = document().map_err(|e| e.to_string())?;
    doc.pointer(pointer)
        .ok_or_else(|| format!("{reference} names nothing in the document"))
}

#[cfg(test)]
mod tests;

//! The drain's second write: exactly the event it read, taken for its park.

use super::*;

/// The write that takes `event`, read from `row`'s pending events, for park `park`:
/// it removes exactly what was read (a concurrent ring may add, never lose) and keeps
/// what was taken with the park's number for a retried wake.
pub(super) fn take_event(
    row: &Row,
    park: u64,
    event: &WakeEvent,
) -> Result<(String, String, Expr), StoreError> {
    let mut expr = Expr::default();
    let p = expr.name(PENDING);
    let taken_name = expr.name(TAKEN);
    let taken = expr.val(
        "taken",
        value(&Taken {
            park,
            event: Some(event.clone()),
        })?,
    );
    let (remove, condition) = match event {
        WakeEvent::Cancel { .. } => (
            format!("{p}.{CANCEL}"),
            format!("attribute_exists({p}.{CANCEL})"),
        ),
        WakeEvent::Reply { text, .. } => {
            let first = expr.val("first", AttributeValue::S(text.clone()));
            (
                format!("{p}.{REPLIES}[0]"),
                format!("{p}.{REPLIES}[0] = {first}"),
            )
        }
        WakeEvent::Push { .. } => {
            let claim = expr.val("claim", value(&row.pending.push)?);
            let numbered = match &row.pending.push_id {
                Some(id) => format!(
                    "{p}.{PUSH_ID} = {}",
                    expr.val("push_id", AttributeValue::S(id.clone()))
                ),
                None => format!("attribute_not_exists({p}.{PUSH_ID})"),
            };
            (
                format!("{p}.{PUSH}, {p}.{PUSH_ID}"),
                format!("{p}.{PUSH} = {claim} AND {numbered}"),
            )
        }
        WakeEvent::Follow { .. } => {
            let report = expr.val("report", value(&row.pending.follow)?);
            (format!("{p}.{FOLLOW}"), format!("{p}.{FOLLOW} = {report}"))
        }
    };
    // What goes before it by priority was not pending when the row was read: still not.
    let before = match event {
        WakeEvent::Cancel { .. } => vec![],
        WakeEvent::Reply { .. } => vec![format!("attribute_not_exists({p}.{CANCEL})")],
        WakeEvent::Push { .. } | WakeEvent::Follow { .. } => {
            let zero = expr.val("zero", AttributeValue::N("0".into()));
            let mut before = vec![
                format!("attribute_not_exists({p}.{CANCEL})"),
                format!("(attribute_not_exists({p}.{REPLIES}) OR size({p}.{REPLIES}) = {zero})"),
            ];
            if matches!(event, WakeEvent::Follow { .. }) {
                before.push(format!("attribute_not_exists({p}.{PUSH})"));
            }
            before
        }
    };
    let condition = std::iter::once(condition)
        .chain(before)
        .collect::<Vec<_>>()
        .join(" AND ");
    let update = format!("SET {taken_name} = {taken} REMOVE {remove}");
    Ok((update, condition, expr))
}

//! The manifest: what a note carries, what the task's own list says, the counts' bounds.

use super::*;

#[test]
fn chunks_are_joined_in_order_and_an_update_without_append_replaces() {
    let mut m = Manifest::default();
    let b = Bounds::default();
    m.update(seen("a", &["one"]), false, false, b);
    m.update(seen("a", &["two"]), true, false, b);
    assert_eq!(m.for_note(false).views, vec![], "not whole yet: not noted");
    m.update(seen("a", &["three"]), true, true, b);
    assert_eq!(texts(&m, "a"), ["one", "two", "three"]);
    let gone = m.update(seen("a", &["new"]), false, true, b);
    assert_eq!(texts(&m, "a"), ["new"]);
    assert_eq!(gone.len(), 3, "the replaced parts' objects go");
}

#[test]
fn a_note_carries_what_completed_since_the_last_and_the_final_note_all() {
    let mut m = Manifest::default();
    let b = Bounds::default();
    m.update(seen("a", &["A"]), false, true, b);
    let note = m.for_note(false);
    let (views, told) = (note.views, note.told);
    assert_eq!(
        views
            .iter()
            .map(|v| v.artifact_id.as_str())
            .collect::<Vec<_>>(),
        ["a"]
    );
    m.noted(&told);
    m.update(seen("b", &["B"]), false, true, b);
    let views = m.for_note(false).views;
    assert_eq!(
        views
            .iter()
            .map(|v| v.artifact_id.as_str())
            .collect::<Vec<_>>(),
        ["b"]
    );
    assert_eq!(m.for_note(true).views.len(), 2);
}

#[test]
fn the_task_s_own_list_is_the_truth_and_inline_content_stays_within_a_note_s_budget() {
    let mut m = Manifest::default();
    let b = Bounds::default();
    m.update(seen("a", &["streamed"]), false, false, b);
    // Still working: its account replaces what streamed, but is not whole yet.
    m.reconcile(vec![seen("a", &["half"])], false, b);
    assert_eq!(texts(&m, "a"), ["half"]);
    assert!(!m.get("a").unwrap().complete);
    let big = "t".repeat(5000);
    m.reconcile(
        vec![
            seen("a", &["final"]),
            seen("b", &[&big]),
            seen("c", &[&big]),
        ],
        true,
        b,
    );
    assert_eq!(texts(&m, "a"), ["final"]);
    assert!(m.get("a").unwrap().complete);
    let views = m.for_note(true).views;
    let inline: usize = views
        .iter()
        .flat_map(|v| v.parts.iter())
        .filter_map(|p| p.text.as_ref())
        .map(String::len)
        .sum();
    assert!(inline <= standin_wire::NOTE_INLINE_BYTES, "{inline}");
    assert!(views[2].parts[0].text.is_none() && views[2].parts[0].stored);
    let before = m.clone();
    let gone = m.reconcile(vec![seen("a", &["final"])], true, b);
    assert_eq!(m, before, "the same account again changes nothing");
    assert!(
        gone.iter().all(|k| m.references(k)),
        "nothing listed is let go"
    );
}

#[test]
fn past_the_count_an_artifact_is_listed_truncated_without_its_parts() {
    let mut m = Manifest::default();
    let b = Bounds {
        max_bytes: u64::MAX,
        max_count: 2,
    };
    for id in ["a", "b", "c"] {
        m.update(seen(id, &[id]), false, true, b);
    }
    let c = m.get("c").unwrap();
    assert!(c.truncated && c.parts.is_empty());
    for n in 0..20 {
        m.update(seen(&format!("x{n}"), &["x"]), false, true, b);
    }
    assert_eq!(
        m.artifacts.len(),
        8,
        "listed up to 4 times the bound, then not at all"
    );
}

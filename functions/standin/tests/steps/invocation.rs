//! The invocation's agent: reached on a step's first ask and only then, once however
//! often it is asked.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// An invocation whose agent is reached through `connects`, counted.
fn counting<'a>(
    w: &'a World,
    connects: &'a AtomicUsize,
) -> Invocation<'a, MemoryStore, &'a FakeAgent> {
    Invocation::new(Teller::new(&w.store), async move {
        connects.fetch_add(1, Ordering::SeqCst);
        Ok(&w.agent)
    })
}

#[tokio::test]
async fn an_end_that_needs_nothing_of_the_agent_never_reaches_it() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let mut step = first_turn(&w, &spec).await;
    step.next = Some(Next::End(EndCause::failed("the parent gave up")));
    let connects = AtomicUsize::new(0);
    let closed = steps::end(&counting(&w, &connects), &step)
        .await
        .unwrap()
        .expect("closed");
    assert!(closed.row.closed);
    assert_eq!(
        connects.load(Ordering::SeqCst),
        0,
        "no push config to delete and no remote cancel: the card is never read"
    );
}

#[tokio::test]
async fn the_agent_is_reached_once_however_often_a_step_asks() {
    let w = World::new(true).await;
    let connects = AtomicUsize::new(0);
    let invocation = counting(&w, &connects);
    assert_eq!(
        connects.load(Ordering::SeqCst),
        0,
        "nothing reached before an ask"
    );
    let first = invocation.agent().await.map(|a| std::ptr::from_ref(*a));
    let again = invocation.agent().await.map(|a| std::ptr::from_ref(*a));
    assert_eq!(first, again);
    assert_eq!(connects.load(Ordering::SeqCst), 1);
}

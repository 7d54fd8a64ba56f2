#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// Reads a card naming the agent's URL, counting reads; an agent whose URL names
/// `silent` never answers and one naming `broken` refuses.
#[derive(Clone, Default)]
struct Counted(Arc<AtomicUsize>);

impl CardReader for Counted {
    fn read<'a>(&'a self, spec: &'a AgentSpec) -> BoxFuture<'a, Result<Profile, String>> {
        Box::pin(async move {
            self.0.fetch_add(1, Ordering::SeqCst);
            if spec.url.contains("silent") {
                std::future::pending::<()>().await;
            }
            if spec.url.contains("broken") {
                return Err("the card answered HTTP 500".to_owned());
            }
            Ok(Profile {
                name: spec.url.clone(),
                ..Profile::default()
            })
        })
    }
}

fn spec(id: &str, url: &str) -> AgentSpec {
    AgentSpec::parse_entry(&format!(r#"{{"id":"{id}","url":"{url}"}}"#)).expect("an entry")
}

fn reads(reader: &Counted) -> usize {
    reader.0.load(Ordering::SeqCst)
}

#[tokio::test(start_paused = true)]
async fn each_agent_is_described_in_order_and_kept_a_while() {
    let reader = Counted::default();
    let cards = Cards::new(Box::new(reader.clone()));
    let (a, b) = (
        spec("a", "https://a.example"),
        spec("b", "https://b.example"),
    );
    let described = cards.describe(&[&a, &b]).await;
    let names: Vec<_> = described.iter().map(|d| d.clone().unwrap().name).collect();
    assert_eq!(names, ["https://a.example", "https://b.example"]);
    assert_eq!(reads(&reader), 2);

    tokio::time::advance(KEPT_READ - Duration::from_secs(1)).await;
    cards.describe(&[&a, &b]).await;
    assert_eq!(reads(&reader), 2, "kept, not read again");

    tokio::time::advance(Duration::from_secs(2)).await;
    cards.describe(&[&a]).await;
    assert_eq!(reads(&reader), 3, "read again once it lapsed");
}

#[tokio::test(start_paused = true)]
async fn an_edited_entry_reads_its_card_again() {
    let reader = Counted::default();
    let cards = Cards::new(Box::new(reader.clone()));
    cards.describe(&[&spec("a", "https://a.example")]).await;
    let edited = spec("a", "https://a2.example");
    let described = cards.describe(&[&edited]).await;
    assert_eq!(described[0].clone().unwrap().name, "https://a2.example");
    assert_eq!(reads(&reader), 2);
}

#[tokio::test(start_paused = true)]
async fn a_card_that_does_not_answer_is_shown_as_such_without_holding_the_others() {
    let reader = Counted::default();
    let cards = Cards::new(Box::new(reader.clone()));
    let (silent, broken, fine) = (
        spec("s", "https://silent.example"),
        spec("x", "https://broken.example"),
        spec("f", "https://fine.example"),
    );
    let started = Instant::now();
    let described = cards.describe(&[&silent, &broken, &fine]).await;
    assert_eq!(
        started.elapsed(),
        READ_BOUND,
        "read side by side, one bound"
    );
    assert_eq!(
        described[0],
        Err("the agent's card did not answer within 3 s".to_owned())
    );
    assert_eq!(described[1], Err("the card answered HTTP 500".to_owned()));
    assert!(described[2].is_ok());

    // A slow failure is kept, for less time than a read; a quick one is not kept at all
    // (the agent may be back at the next listing).
    cards.describe(&[&broken]).await;
    assert_eq!(reads(&reader), 4, "the quick failure read again");
    tokio::time::advance(KEPT_FAILURE - Duration::from_secs(1)).await;
    cards.describe(&[&silent]).await;
    assert_eq!(reads(&reader), 4, "the slow failure kept");
    tokio::time::advance(Duration::from_secs(2)).await;
    cards.describe(&[&silent, &fine]).await;
    assert_eq!(
        reads(&reader),
        5,
        "the slow failure read again, the read kept"
    );
}

use std::time::Duration;

use serde_json::json;

use super::memory::MemoryRegistry;
use super::*;

fn stack() -> AgentsConfig {
    AgentsConfig::parse(r#"{"agents":[{"id":"seeded","url":"http://127.0.0.1:9"}]}"#)
        .expect("valid")
}

fn catalog(ttl: Duration) -> (Catalog, MemoryRegistry) {
    let registry = MemoryRegistry::default();
    let catalog = Catalog::with_ttl(stack(), Some(Box::new(registry.clone())), ttl);
    (catalog, registry)
}

#[tokio::test]
async fn an_agent_put_is_found_and_stored_as_its_entry() {
    let (catalog, registry) = catalog(CATALOG_TTL);
    let spec = catalog
        .put(
            "added",
            &json!({"url": "https://a.example", "updates": "follow"}),
        )
        .await
        .expect("put");
    assert_eq!(spec.id, "added");
    let found = catalog.agent("added").await.expect("read");
    assert_eq!(found, Some((spec.clone(), Source::Registry)));
    let stored = registry.entry("added").expect("stored");
    assert_eq!(AgentSpec::parse_entry(&stored).expect("valid"), spec);
}

#[tokio::test]
async fn the_stacks_agents_are_not_the_apis_to_change() {
    let (catalog, registry) = catalog(CATALOG_TTL);
    let put = catalog
        .put("seeded", &json!({"url": "https://elsewhere.example"}))
        .await;
    assert!(
        matches!(put, Err(ChangeError::StackOwned(ref id)) if id == "seeded"),
        "{put:?}"
    );
    let removed = catalog.remove("seeded").await;
    assert!(
        matches!(removed, Err(ChangeError::StackOwned(_))),
        "{removed:?}"
    );
    assert_eq!(registry.entry("seeded"), None);
    let (spec, source) = catalog.agent("seeded").await.expect("read").expect("there");
    assert_eq!(
        (spec.url.as_str(), source),
        ("http://127.0.0.1:9", Source::Stack)
    );
}

#[tokio::test]
async fn a_bad_entry_is_refused_naming_its_field_and_nothing_is_stored() {
    let (catalog, registry) = catalog(CATALOG_TTL);
    for (entry, field) in [
        (json!({"url": "ftp://h"}), "url"),
        (json!({"id": "other", "url": "http://h"}), "id"),
        (
            json!({"url": "http://h", "follow_interval": 0.1}),
            "follow_interval",
        ),
        (json!({"url": "http://h", "colour": "blue"}), "colour"),
        (json!([1, 2]), "agent entry"),
    ] {
        match catalog.put("x", &entry).await {
            Err(ChangeError::Invalid(e)) => assert_eq!(e.field, field, "{entry}: {e}"),
            other => panic!("{entry}: {other:?}"),
        }
    }
    assert_eq!(registry.entry("x"), None);
}

#[tokio::test]
async fn another_functions_edit_is_seen_once_the_cache_lapses() {
    let (catalog, registry) = catalog(Duration::from_millis(50));
    assert_eq!(catalog.agent("late").await.expect("read"), None);
    registry.set("late", Some(r#"{"id":"late","url":"http://h"}"#));
    // Within the TTL the absence is remembered; after it the entry is read.
    assert_eq!(catalog.agent("late").await.expect("read"), None);
    tokio::time::sleep(Duration::from_millis(80)).await;
    let found = catalog.agent("late").await.expect("read").expect("seen");
    assert_eq!(found.0.url, "http://h");
    registry.set("late", None);
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert_eq!(catalog.agent("late").await.expect("read"), None);
}

#[tokio::test]
async fn an_agent_shown_is_the_one_stored_now_whatever_is_cached() {
    let (catalog, registry) = catalog(CATALOG_TTL);
    registry.set("kept", Some(r#"{"id":"kept","url":"http://h"}"#));
    assert!(catalog.agent("kept").await.expect("read").is_some());
    // Another function removes it: a start may use the cached copy for the TTL, but
    // whoever asks to see the agent sees it gone at once.
    registry.set("kept", None);
    assert!(
        catalog.agent("kept").await.expect("read").is_some(),
        "cached"
    );
    assert_eq!(catalog.agent_now("kept").await.expect("read"), None);
    assert_eq!(
        catalog.agent("kept").await.expect("read"),
        None,
        "and the cache learns it"
    );
}

#[tokio::test]
async fn a_stored_entry_that_no_longer_passes_is_absent() {
    let (catalog, registry) = catalog(CATALOG_TTL);
    registry.set("old", Some(r#"{"id":"old","url":"gopher://h"}"#));
    registry.set("moved", Some(r#"{"id":"elsewhere","url":"http://h"}"#));
    assert_eq!(catalog.agent("old").await.expect("read"), None);
    assert_eq!(catalog.agent("moved").await.expect("read"), None);
}

#[tokio::test]
async fn the_list_pages_the_stacks_agents_then_the_registrys() {
    let (catalog, _registry) = catalog(CATALOG_TTL);
    for id in ["b", "a", "c"] {
        catalog
            .put(id, &json!({"url": "http://h"}))
            .await
            .expect("put");
    }
    let (first, next) = catalog.list(None, 2).await.expect("list");
    let ids: Vec<_> = first.iter().map(|(a, s)| (a.id.as_str(), *s)).collect();
    assert_eq!(
        ids,
        [
            ("seeded", Source::Stack),
            ("a", Source::Registry),
            ("b", Source::Registry)
        ]
    );
    let (second, last) = catalog.list(next.as_deref(), 2).await.expect("list");
    let ids: Vec<_> = second.iter().map(|(a, _)| a.id.as_str()).collect();
    assert_eq!((ids, last), (vec!["c"], None));
}

#[tokio::test]
async fn without_a_registry_only_the_stacks_agents_are_known() {
    let catalog = Catalog::new(stack(), None);
    assert!(catalog.agent("seeded").await.expect("read").is_some());
    assert_eq!(catalog.agent("added").await.expect("read"), None);
    let put = catalog.put("added", &json!({"url": "http://h"})).await;
    assert!(matches!(put, Err(ChangeError::Registry(_))), "{put:?}");
}

#[tokio::test]
async fn an_id_a_later_deploy_gave_the_stack_is_listed_once_and_its_copy_removable() {
    let (catalog, registry) = catalog(CATALOG_TTL);
    registry.set(
        "seeded",
        Some(r#"{"id":"seeded","url":"http://elsewhere"}"#),
    );
    let (listed, _) = catalog.list(None, 10).await.expect("list");
    let seeded: Vec<_> = listed.iter().filter(|(a, _)| a.id == "seeded").collect();
    assert_eq!(seeded.len(), 1);
    assert_eq!(seeded[0].1, Source::Stack);
    assert_eq!(
        catalog.remove("seeded").await,
        Ok(true),
        "the shadowed copy goes"
    );
    assert_eq!(registry.entry("seeded"), None);
    assert!(matches!(
        catalog.remove("seeded").await,
        Err(ChangeError::StackOwned(_))
    ));
}

#[tokio::test]
async fn the_cache_is_bounded() {
    let (catalog, _registry) = catalog(CATALOG_TTL);
    for i in 0..(CATALOG_ENTRIES + 10) {
        assert_eq!(
            catalog.agent(&format!("unknown-{i}")).await.expect("read"),
            None
        );
    }
    let held = catalog.cache.lock().map(|c| c.len()).unwrap_or(usize::MAX);
    assert!(held <= CATALOG_ENTRIES, "{held}");
}

fn refused_field(put: Result<Vec<AgentSpec>, ChangeError>) -> String {
    match put {
        Err(ChangeError::Invalid(err)) => err.to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_document_is_put_whole_or_not_at_all() {
    let (catalog, registry) = catalog(CATALOG_TTL);
    let half_bad = json!({"agents": [
        {"id": "ok1", "url": "https://a.example"},
        {"id": "bad", "url": "https://b.example", "follow_interval": 0.5}
    ]});
    assert_eq!(
        refused_field(catalog.put_all(&half_bad).await),
        "agents[1].follow_interval: must be at least 1 second, got 0.5"
    );
    assert_eq!(registry.entry("ok1"), None, "nothing is written");
    let sometimes =
        json!({"agents": [{"id": "x3", "url": "https://a.example", "updates": "sometimes"}]});
    let said = refused_field(catalog.put_all(&sometimes).await);
    assert!(said.starts_with("agents[0].updates: "), "{said}");
    let twice = json!({"agents": [
        {"id": "a", "url": "https://a.example"},
        {"id": "a", "url": "https://b.example"}
    ]});
    assert_eq!(
        refused_field(catalog.put_all(&twice).await),
        "agents[1].id: duplicate id \"a\""
    );
    let stacks = json!({"agents": [
        {"id": "new", "url": "https://a.example"},
        {"id": "seeded", "url": "https://b.example"}
    ]});
    assert!(matches!(
        catalog.put_all(&stacks).await,
        Err(ChangeError::StackOwned(ref id)) if id == "seeded"
    ));
    assert_eq!(registry.entry("new"), None);
    let too_many = json!({"agents": (0..=DOCUMENT_ENTRIES)
        .map(|i| json!({"id": format!("a{i}"), "url": "https://a.example"}))
        .collect::<Vec<_>>()});
    assert_eq!(
        refused_field(catalog.put_all(&too_many).await),
        "agents: must hold at most 100 entries, got 101"
    );
    assert!(refused_field(catalog.put_all(&json!({"agents": 3})).await).starts_with("agents: "));
    assert_eq!(
        refused_field(catalog.put_all(&json!({"agents": [7]})).await),
        "agents[0]: must be an object with an id and a url"
    );

    let good = json!({"agents": [
        {"id": "ok1", "url": "https://a.example"},
        {"id": "ok2", "url": "https://b.example", "updates": "follow"}
    ]});
    let put = catalog.put_all(&good).await.expect("put");
    assert_eq!(
        put.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["ok1", "ok2"]
    );
    for id in ["ok1", "ok2"] {
        assert!(registry.entry(id).is_some(), "{id} stored");
        assert!(catalog.agent(id).await.expect("read").is_some());
    }
}

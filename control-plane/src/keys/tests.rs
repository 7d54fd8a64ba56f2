use secrecy::ExposeSecret;

use super::memory::MemoryKeys;
use super::*;
use standin::registry::BoxFuture;

async fn kept(agents: Option<Vec<String>>) -> (MemoryKeys, String, KeyRecord) {
    let keys = MemoryKeys::default();
    let issued = issue("ci".into(), agents);
    keys.create(&issued.record).await.expect("kept");
    (keys, issued.key.expose_secret().to_owned(), issued.record)
}

#[tokio::test]
async fn a_key_is_kept_only_as_its_digest_and_opens_the_front() {
    let (keys, key, record) = kept(None).await;
    assert!(key.starts_with(KEY_PREFIX), "{key}");
    assert!(key.contains(&record.key_id));
    let stored = format!("{:?}", keys.get(&record.key_id).await);
    let secret = key.rsplit('_').next().expect("a secret");
    assert!(!stored.contains(secret), "the secret is kept: {stored}");
    let header = format!("Bearer {key}");
    let checked = check(&keys, Some(&header), "billing").await;
    assert_eq!(checked.map(|r| r.key_id), Ok(record.key_id.clone()));
    // The scheme in any case, and any spaces or tabs after it.
    for header in [format!("bearer {key}"), format!("Bearer \t {key} ")] {
        assert!(
            check(&keys, Some(&header), "billing").await.is_ok(),
            "{header}"
        );
    }
}

#[tokio::test]
async fn a_key_that_differs_by_one_character_or_was_revoked_is_unknown() {
    let (keys, key, record) = kept(None).await;
    let last = key.chars().last().expect("a last character");
    let changed = format!(
        "Bearer {}{}",
        &key[..key.len() - 1],
        if last == '0' { '1' } else { '0' }
    );
    assert_eq!(
        check(&keys, Some(&changed), "billing").await,
        Err(Refusal::Unknown)
    );
    assert!(keys.revoke(&record.key_id).await.expect("revoked"));
    assert_eq!(
        check(&keys, Some(&format!("Bearer {key}")), "billing").await,
        Err(Refusal::Unknown)
    );
    assert_eq!(keys.revoke(&record.key_id).await, Ok(false), "once");
}

#[tokio::test]
async fn no_key_a_malformed_one_or_another_scheme_is_refused() {
    let (keys, key, _) = kept(None).await;
    let basic = format!("Basic {key}");
    for header in [
        None,
        Some(""),
        Some("Bearer"),
        Some(key.as_str()),
        Some(basic.as_str()),
    ] {
        assert_eq!(
            check(&keys, header, "billing").await,
            Err(Refusal::NoKey),
            "{header:?}"
        );
    }
    let upper = format!("Bearer {}", key.to_uppercase());
    for header in ["Bearer sik_abc_def", "Bearer not-a-key", upper.as_str()] {
        assert_eq!(
            check(&keys, Some(header), "billing").await,
            Err(Refusal::Unknown),
            "{header}"
        );
    }
}

/// A store that does not answer lets nobody in, and says so as its own refusal.
#[tokio::test]
async fn keys_that_cannot_be_read_let_nobody_in() {
    struct Down;
    impl KeyStore for Down {
        fn create<'a>(&'a self, _: &'a KeyRecord) -> BoxFuture<'a, Result<(), KeyStoreError>> {
            Box::pin(async { Err(KeyStoreError::Unavailable("down".into())) })
        }
        fn get<'a>(
            &'a self,
            _: &'a str,
        ) -> BoxFuture<'a, Result<Option<KeyRecord>, KeyStoreError>> {
            Box::pin(async { Err(KeyStoreError::Unavailable("down".into())) })
        }
        fn revoke<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<bool, KeyStoreError>> {
            Box::pin(async { Err(KeyStoreError::Unavailable("down".into())) })
        }
        fn list<'a>(
            &'a self,
            _: Option<&'a str>,
            _: u32,
        ) -> BoxFuture<'a, Result<KeyPage, KeyStoreError>> {
            Box::pin(async { Err(KeyStoreError::Unavailable("down".into())) })
        }
    }
    let key = issue("x".into(), None);
    let header = format!("Bearer {}", key.key.expose_secret());
    let refused = check(&Down, Some(&header), "billing").await;
    assert!(matches!(refused, Err(Refusal::Store(_))), "{refused:?}");
}

#[tokio::test]
async fn a_key_limited_to_some_agents_reaches_only_those() {
    let (keys, key, record) = kept(Some(vec!["billing".into()])).await;
    let header = format!("Bearer {key}");
    assert!(check(&keys, Some(&header), "billing").await.is_ok());
    let refused = check(&keys, Some(&header), "payroll").await;
    assert_eq!(
        refused,
        Err(Refusal::NotForAgent {
            key_id: record.key_id,
            agent: "payroll".into()
        })
    );
    let words = refused.err().map(|r| r.to_string()).unwrap_or_default();
    assert!(!words.contains(&key), "{words}");
}

#[test]
fn every_key_is_fresh() {
    let a = issue("a".into(), None);
    let b = issue("a".into(), None);
    assert_ne!(a.record.key_id, b.record.key_id);
    assert_ne!(a.key.expose_secret(), b.key.expose_secret());
    assert_eq!(a.key.expose_secret().len(), KEY_PREFIX.len() + 16 + 1 + 64);
}

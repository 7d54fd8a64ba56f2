//! The push receiver's CPU per push against its physical floor: the whole check (limits,
//! token, content type, parse, the row read, the constant-time digest compare, the
//! conditional write, the ring) over the in-memory store, against SHA-256 of the token
//! plus parsing the body, which any receiver must do. For a small body and a 60 KB one.
//! `cargo bench -p standin --bench receiver`; `make bench` runs it and reads the results.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a benchmark fails loudly by design

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use http::HeaderMap;
use sha2::{Digest, Sha256};
use standin::doorbell::Doorbell;
use standin::doorbell::DoorbellError;
use standin::push::receiver;
use standin::push::token::PushToken;
use standin::row::memory::MemoryStore;
use standin::row::{Parks, StandIns};
use standin::row::{Row, Watch, WatchMode};
use standin::state::remote_out;
use standin_wire::TaskState;

const ID: &str = "stand-in";
const REMOTE: &str = "remote-task";

/// Rings go nowhere: the benchmark measures the receiver, not a recorder of rings.
struct SilentBell;

impl Doorbell for SilentBell {
    async fn ring(&self, _: &str, _: Option<&standin::row::RungPush>) -> Result<(), DoorbellError> {
        Ok(())
    }
    async fn heartbeat(&self, _: &str) -> Result<(), DoorbellError> {
        Ok(())
    }
}

fn body(text_bytes: usize) -> Vec<u8> {
    let text = "x".repeat(text_bytes);
    format!(
        r#"{{"statusUpdate":{{"taskId":"{REMOTE}","contextId":"c","status":{{"state":"TASK_STATE_WORKING","message":{{"messageId":"m","role":"ROLE_AGENT","parts":[{{"text":"{text}"}}]}}}}}}}}"#
    )
    .into_bytes()
}

fn receiver_vs_floor(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let token = PushToken::generate();
    let store = MemoryStore::new();
    runtime.block_on(async {
        let mut row = Row::new(ID, "agent");
        row.remote_task_id = Some(REMOTE.into());
        row.watch = Some(Watch {
            mode: WatchMode::Push,
            config_id: Some("c".into()),
            token_digest: Some(token.digest()),
        });
        row.last = Some(remote_out(REMOTE, TaskState::InputRequired, "q"));
        store.create(&row).await.expect("row");
        store.park(ID, 1, "park-token").await.expect("parked");
    });
    let mut headers = HeaderMap::new();
    headers.insert("content-type", "application/json".parse().unwrap());
    headers.insert(
        receiver::TOKEN_HEADER,
        token.expose().parse().expect("token header"),
    );
    let mut group = c.benchmark_group("push");
    for (name, text_bytes) in [("small", 16), ("60KB", 60 * 1024)] {
        let body = body(text_bytes);
        assert!(
            body.len() <= receiver::MAX_PUSH_BYTES,
            "within the receiver's limit"
        );
        let answer = runtime.block_on(receiver::receive(&store, &SilentBell, ID, &headers, &body));
        assert_eq!(answer.status, 204, "the benchmarked push is accepted");
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(BenchmarkId::new("receiver", name), &body, |b, body| {
            b.iter(|| runtime.block_on(receiver::receive(&store, &SilentBell, ID, &headers, body)));
        });
        group.bench_with_input(BenchmarkId::new("floor", name), &body, |b, body| {
            b.iter(|| {
                let digest = Sha256::digest(token.expose().as_bytes());
                let event = standin_remote::read_push(body).expect("parses");
                (digest, event)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, receiver_vs_floor);
criterion_main!(benches);

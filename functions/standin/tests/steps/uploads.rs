//! Files the parent put through `POST /uploads`, handed over at the turn: a link signed
//! then, or the file itself for an agent that cannot fetch, within a bound; an upload
//! that is gone ends the stand-in, naming the part.

use super::*;
use base64::Engine;
use standin::agents::{FileDelivery, MAX_DELIVERED_BYTES};
use standin::artifacts::Blobs;
use standin::artifacts::memory::MemoryBlobs;
use standin_wire::{FileContent, InputFile, InputPart, UploadId};

fn file(content: FileContent) -> InputPart {
    InputPart::File(InputFile {
        name: Some("rows.csv".into()),
        media_type: Some("text/csv".into()),
        content,
    })
}

/// The bucket, holding each upload's file.
async fn bucket(files: &[(&UploadId, Vec<u8>)]) -> std::sync::Arc<dyn Blobs> {
    let blobs = std::sync::Arc::new(MemoryBlobs::default());
    for (id, bytes) in files {
        blobs.put(&id.key(), bytes.clone()).await.unwrap();
    }
    blobs
}

/// A first turn that names `upload`, the agent ready to ask a question.
async fn first_turn(
    w: &World,
    agent: AgentSpec,
    uploads: std::sync::Arc<dyn Blobs>,
    upload: &UploadId,
) -> Step {
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    w.agent.set_task(task(TaskState::InputRequired, "q"));
    let invocation = w
        .invocation()
        .with_spec(Some(agent))
        .with_uploads(Some(uploads));
    let first = Step::start(ID, "widgets", "go")
        .with_parts(vec![file(FileContent::Upload(upload.clone()))]);
    steps::turn(&invocation, first, Duration::from_secs(5), PACING)
        .await
        .unwrap()
}

fn failed(step: &Step) -> &str {
    let Some(Next::End(EndCause::Failed { reason })) = &step.next else {
        panic!("{:?}", step.next)
    };
    reason
}

#[tokio::test]
async fn an_uploaded_file_reaches_the_agent_as_a_fresh_link_and_a_lost_one_ends_the_stand_in() {
    let kept = UploadId::from_random([3; 16]);
    let gone = UploadId::from_random([4; 16]);
    let uploads = bucket(&[(&kept, b"a,b\n".to_vec())]).await;

    let w = World::new(true).await;
    first_turn(&w, spec(Updates::Off), uploads.clone(), &kept).await;
    let link = format!(
        "memory://{}?expires={}",
        kept.key(),
        standin::uploads::LINK_SECONDS
    );
    assert_eq!(
        w.agent.turns()[0].parts,
        [file(FileContent::Url(link))],
        "a link signed at the turn, the name and media type kept"
    );

    // An upload whose file is gone (the bucket's retention) ends the stand-in, saying so.
    let w = World::new(true).await;
    let step = first_turn(&w, spec(Updates::Off), uploads, &gone).await;
    let reason = failed(&step);
    assert!(
        reason.starts_with(&format!(
            "parts[0].upload_id: the file of {gone} is no longer kept"
        )),
        "{reason}"
    );
    assert!(w.agent.turns().is_empty(), "the agent was not sent a thing");
}

#[tokio::test]
async fn an_agent_that_cannot_fetch_gets_an_uploaded_file_as_its_bytes_within_a_bound() {
    let small = UploadId::from_random([5; 16]);
    let large = UploadId::from_random([6; 16]);
    let too_many = usize::try_from(MAX_DELIVERED_BYTES).unwrap() + 1;
    let uploads = bucket(&[
        (&small, b"a,b\n1,2\n".to_vec()),
        (&large, vec![b'x'; too_many]),
    ])
    .await;
    let bytes_agent = AgentSpec {
        file_delivery: FileDelivery::Bytes,
        ..spec(Updates::Off)
    };

    let w = World::new(true).await;
    first_turn(&w, bytes_agent.clone(), uploads.clone(), &small).await;
    let encoded = base64::engine::general_purpose::STANDARD.encode(b"a,b\n1,2\n");
    assert_eq!(
        w.agent.turns()[0].parts,
        [file(FileContent::Bytes(encoded))]
    );

    let w = World::new(true).await;
    let step = first_turn(&w, bytes_agent, uploads, &large).await;
    let reason = failed(&step);
    assert!(
        reason.starts_with("parts[0].upload_id: the agent takes files as bytes"),
        "{reason}"
    );
    assert!(w.agent.turns().is_empty());
}

/// A first turn Step Functions runs again after it reached the agent sends nothing (it
/// asks GetTask), so it hands nothing over either: a file gone since ends nothing.
#[tokio::test]
async fn a_first_turn_run_again_hands_nothing_over_so_a_file_gone_since_ends_nothing() {
    let kept = UploadId::from_random([7; 16]);
    let uploads = bucket(&[(&kept, b"a,b\n".to_vec())]).await;
    let w = World::new(true).await;
    first_turn(&w, spec(Updates::Off), uploads.clone(), &kept).await;
    assert_eq!(w.agent.count("SendStreamingMessage"), 1);
    uploads.delete(&kept.key()).await.unwrap();
    let again = first_turn(&w, spec(Updates::Off), uploads, &kept).await;
    assert!(
        !matches!(again.next, Some(Next::End(_))),
        "asked, not ended: {:?}",
        again.next
    );
    assert_eq!(w.agent.count("SendStreamingMessage"), 1, "not sent twice");
}

//! A stand-in's summary, as the list and the status show it.

use standin::outbox::Teller;
use standin::row::memory::MemoryStore;
use standin::row::{Applied, Guard, Row, StandIns};
use standin::state::remote_out;
use standin_wire::TaskState;

/// The row keeps when its last note was told, and the summary shows it, so a list of
/// stand-ins shows how long each has been quiet without reading a note.
#[tokio::test]
async fn the_summary_shows_when_the_last_note_was_told() {
    let store = MemoryStore::new();
    store.create(&Row::new("t-1", "agent-a")).await.unwrap();
    let applied = Teller::new(&store)
        .tell(
            "t-1",
            None,
            &remote_out("r-1", TaskState::Working, "building"),
            &Guard::Open,
        )
        .await
        .unwrap();
    let Applied::Changed { note, row } = applied else {
        panic!("a change: {applied:?}");
    };
    let summary = standin_control_plane::summary(&row);
    assert_eq!(summary.last_note_at.as_deref(), Some(note.at.as_str()));
    assert_eq!(summary.seq, note.seq);
}

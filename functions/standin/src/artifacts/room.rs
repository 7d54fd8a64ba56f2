//! How many artifact parts one process holds in memory at once. A part streamed in is
//! held until it reaches S3's least part size (5 MiB), so a follower holding a hundred
//! streams would need a hundred parts' memory if every agent streamed a large artifact
//! at once. Instead its memory, less what the process and each stream's event buffer
//! need, is divided into parts: a part past that room waits for one to go up, and its
//! stream is not read meanwhile (the agent's connection holds what it sends; nothing is
//! lost, that stand-in hears it later).

use std::sync::{Arc, Weak};

use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};

use super::blobs::MIN_PART_BYTES;

/// What one part held in memory takes: the part as the sink holds it, the tail held back
/// for the echo check, and the last chunk that took it past the part size.
pub const PART_ROOM_BYTES: usize = MIN_PART_BYTES + 512 * 1024;

/// The process itself, with its connections and buffers (a follower with a hundred
/// streams peaked at 20 MiB in the soak), with room to spare.
pub const PROCESS_BYTES: usize = 48 * 1024 * 1024;

const MIB: usize = 1024 * 1024;

#[derive(Clone)]
pub struct PartRoom {
    parts: Arc<Semaphore>,
}

impl PartRoom {
    pub fn new(parts: usize) -> Self {
        Self {
            parts: Arc::new(Semaphore::new(parts.max(1))),
        }
    }

    /// The room of a function with `memory_mib` holding `streams` streams, each of which
    /// may buffer one event of `event_bytes`; at least one part.
    pub fn for_memory(memory_mib: u64, streams: usize, event_bytes: usize) -> Self {
        let memory = usize::try_from(memory_mib)
            .unwrap_or(usize::MAX / MIB)
            .saturating_mul(MIB);
        let left = memory
            .saturating_sub(PROCESS_BYTES)
            .saturating_sub(streams.saturating_mul(event_bytes));
        Self::new(left / PART_ROOM_BYTES)
    }

    /// Whether the memory holds the process and every stream's event buffer with room
    /// for one part.
    pub fn fits(memory_mib: u64, streams: usize, event_bytes: usize) -> bool {
        let needed = PROCESS_BYTES + streams.saturating_mul(event_bytes) + PART_ROOM_BYTES;
        usize::try_from(memory_mib).is_ok_and(|m| m.saturating_mul(MIB) >= needed)
    }

    /// Parts free now.
    #[cfg(any(test, feature = "test-support"))]
    pub fn free(&self) -> usize {
        self.parts.available_permits()
    }
}

/// One stand-in's claim on the room: its parts share one place, so a part it opens while
/// another of its own is open (a GetTask storing while a stream's part is unfinished, or
/// a part a broken stream never closed) never waits for itself.
#[derive(Default)]
pub struct Claim {
    held: Mutex<Weak<OwnedSemaphorePermit>>,
}

impl Claim {
    /// A place for one more part, waiting for one to be free if the stand-in holds none.
    pub async fn place(&self, room: &PartRoom) -> Option<Arc<OwnedSemaphorePermit>> {
        let mut held = self.held.lock().await;
        if let Some(place) = held.upgrade() {
            return Some(place);
        }
        let place = Arc::new(room.parts.clone().acquire_owned().await.ok()?);
        *held = Arc::downgrade(&place);
        Some(place)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::time::Duration;

    #[test]
    fn the_memory_less_the_process_and_the_streams_is_divided_into_parts() {
        // A 256 MB follower with 100 streams of at most 1 MiB events: 19 parts.
        assert_eq!(PartRoom::for_memory(256, 100, MIB).free(), 19);
        assert!(PartRoom::fits(256, 100, MIB));
        // One stand-in in 128 MB.
        assert_eq!(PartRoom::for_memory(128, 1, MIB).free(), 14);
        // Streams past the memory: still one part, and it does not fit.
        assert_eq!(PartRoom::for_memory(256, 500, MIB).free(), 1);
        assert!(!PartRoom::fits(256, 500, MIB));
    }

    #[tokio::test]
    async fn a_stand_in_s_parts_share_a_place_and_others_wait_for_one() {
        let room = PartRoom::new(1);
        let (a, b) = (Claim::default(), Claim::default());
        let first = a.place(&room).await.unwrap();
        let second = a.place(&room).await.unwrap();
        assert!(
            Arc::ptr_eq(&first, &second),
            "its own parts share one place"
        );
        assert_eq!(room.free(), 0);
        let waiting = tokio::spawn(async move { b.place(&room).await.map(|_| ()) });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "another stand-in waits");
        drop(first);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !waiting.is_finished(),
            "until every part of the first is done"
        );
        drop(second);
        assert_eq!(waiting.await.unwrap(), Some(()));
    }
}

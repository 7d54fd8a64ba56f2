//! Bounds on everything the stand-in reads from an agent. What is kept of an answer is
//! bounded (see `skim`); past the bound the answer is an agent error
//! (`RemoteError::TooLarge`), never an out-of-memory.

/// The agent card, read whole (cards are small; a larger one is refused).
pub const MAX_CARD_BYTES: usize = 256 * 1024;
/// A unary answer (GetTask, SendMessage, CancelTask, push config calls) after skimming.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
/// One stream event after skimming.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;
/// Every byte of one stream (a turn's, or a follow window's), skimmed members included:
/// an endless stream ends here rather than at the function's timeout.
/// Large enough for a 100 MiB artifact's base64 (4/3 of it) and the events around it.
pub const MAX_STREAM_BYTES: usize = 256 * 1024 * 1024;
/// One gRPC message, before skimming: gRPC's own default limit, which senders expect.
/// Protobuf is not read in part, so a message is held whole, and its JSON form while it
/// is skimmed; its fields are counted before it is decoded (`binding/grpc/prune.rs`), so
/// its tree stays within a few tens of MB. An agent sends a larger artifact in chunks
/// (`append`).
pub const MAX_GRPC_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// An error message kept from an agent's error object (it reaches logs and reasons).
pub const MAX_ERROR_MESSAGE_BYTES: usize = 1024;

// What a card says of its agent, as a listing keeps it (`profile.rs`).

/// The most of the card's description kept, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// The most skills kept, in the card's order.
pub const MAX_SKILLS: usize = 10;
/// The most of a skill's description kept, in characters.
pub const MAX_SKILL_DESCRIPTION_CHARS: usize = 200;
/// The most of a name, an id or a tag kept, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// The most tags kept per skill.
pub const MAX_TAGS: usize = 5;

/// An agent's error text as the stand-in keeps it: scrubbed (an agent may echo our token)
/// and cut to `MAX_ERROR_MESSAGE_BYTES` (on a character boundary).
pub fn bounded_message(message: &str) -> String {
    let message = standin_wire::scrub::scrub(message);
    if message.len() <= MAX_ERROR_MESSAGE_BYTES {
        return message;
    }
    let mut end = MAX_ERROR_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_are_scrubbed_too() {
        let echoed = "bad token Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL";
        assert!(!bounded_message(echoed).contains("Zm9vYmFy"));
    }

    #[test]
    fn error_messages_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_ERROR_MESSAGE_BYTES);
        let cut = bounded_message(&long);
        assert!(cut.len() <= MAX_ERROR_MESSAGE_BYTES + "…".len());
        assert!(cut.ends_with('…'));
        assert_eq!(bounded_message("short"), "short");
    }
}

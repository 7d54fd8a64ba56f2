//! Protobuf read in part, as the skim reads JSON. A decoded message is a tree of
//! allocations, far larger than its bytes for a message of many small fields, so before
//! a message is decoded its wire form is walked once with the descriptor: `history`
//! (never read) and fields a2a.proto does not know are cut out, and what is left is
//! counted and nested within bounds, so a message within the byte bound cannot unfold
//! into more than the function's memory.

use prost_reflect::{Kind, MessageDescriptor};

use crate::error::RemoteError;

/// Fields kept in one message, nested ones included. A decoded field costs about 730
/// bytes (measured with prost-reflect 0.16: a data part of 30,000 numbers held 22 MB),
/// so this many hold about 24 MB. A task's parts, artifacts and metadata come to a few
/// hundred; a data part of more than about 16,000 JSON values is past it.
pub const MAX_FIELDS: usize = 32 * 1024;
/// As deep as prost decodes (its recursion limit): a JSON object in a data part or
/// metadata is three levels (Struct, its entry, the Value), so about 33 levels of JSON.
pub const MAX_DEPTH: usize = 100;

/// `bytes`, a `descriptor` message, with what is never read cut out; refused past the
/// bounds or where the wire form does not read.
pub fn prune(bytes: &[u8], descriptor: &MessageDescriptor) -> Result<Vec<u8>, RemoteError> {
    let mut walk = Walk { fields: 0 };
    let mut out = Vec::with_capacity(bytes.len());
    walk.message(bytes, descriptor, 0, &mut out)?;
    Ok(out)
}

struct Walk {
    fields: usize,
}

impl Walk {
    fn message(
        &mut self,
        mut bytes: &[u8],
        descriptor: &MessageDescriptor,
        depth: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), RemoteError> {
        if depth > MAX_DEPTH {
            return Err(RemoteError::TooLarge {
                what: "a gRPC message's nesting",
                limit: MAX_DEPTH,
            });
        }
        while !bytes.is_empty() {
            let field_start = bytes;
            let key = varint(&mut bytes)?;
            let (number, wire_type) = (key >> 3, key & 7);
            let value = match wire_type {
                0 => varint(&mut bytes).map(|_| None)?,
                1 => take(&mut bytes, 8).map(|_| None)?,
                5 => take(&mut bytes, 4).map(|_| None)?,
                2 => {
                    let len = usize::try_from(varint(&mut bytes)?)
                        .map_err(|_| unreadable("a length past memory"))?;
                    Some(take(&mut bytes, len)?)
                }
                _ => return Err(unreadable("a group or an unknown wire type")),
            };
            let field = u32::try_from(number)
                .ok()
                .and_then(|n| descriptor.get_field(n));
            let Some(field) = field else {
                continue; // not a2a.proto's: never read
            };
            if field.name() == "history" && descriptor.full_name() == "lf.a2a.v1.Task" {
                continue;
            }
            self.fields += 1;
            if self.fields > MAX_FIELDS {
                return Err(RemoteError::TooLarge {
                    what: "a gRPC message's fields",
                    limit: MAX_FIELDS,
                });
            }
            match (field.kind(), value) {
                (Kind::Message(inner), Some(value)) => {
                    // Written in place and its length put before it: one buffer however
                    // deep the message, never a copy per level held at once.
                    put_varint(key, out);
                    let start = out.len();
                    self.message(value, &inner, depth + 1, out)?;
                    let mut length = Vec::with_capacity(10);
                    put_varint((out.len() - start) as u64, &mut length);
                    out.splice(start..start, length);
                }
                _ => out.extend_from_slice(&field_start[..field_start.len() - bytes.len()]),
            }
        }
        Ok(())
    }
}

fn unreadable(why: &str) -> RemoteError {
    RemoteError::InvalidResponse(format!("a gRPC message does not read: {why}"))
}

fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Result<&'a [u8], RemoteError> {
    if n > bytes.len() {
        return Err(unreadable("a field runs past the message"));
    }
    let (taken, rest) = bytes.split_at(n);
    *bytes = rest;
    Ok(taken)
}

fn varint(bytes: &mut &[u8]) -> Result<u64, RemoteError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes
            .split_first()
            .ok_or_else(|| unreadable("a number runs past the message"))?;
        *bytes = rest;
        if shift == 63 && byte > 1 {
            return Err(unreadable("a number past 64 bits"));
        }
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(value);
        }
    }
    Err(unreadable("a number longer than ten bytes"))
}

fn put_varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
mod tests {
    use prost::Message as _;
    use prost_reflect::DynamicMessage;
    use serde_json::json;

    use super::*;
    use crate::a2a::binding::grpc::messages::test_support::{descriptor, encode};

    #[test]
    fn history_and_unknown_fields_are_cut_and_the_rest_reads_the_same() {
        let task = json!({"id": "t-1", "contextId": "c-1",
            "status": {"state": "TASK_STATE_WORKING"},
            "history": [{"messageId": "h", "role": "ROLE_USER", "parts": [{"text": "old"}]}],
            "artifacts": [{"artifactId": "a", "parts": [{"text": "kept"}]}],
            "metadata": {"k": [1, {"deep": true}]}});
        let mut bytes = encode("lf.a2a.v1.Task", &task);
        bytes.extend_from_slice(&[0xf8, 0x07, 0x01]); // field 127, a varint: unknown
        let stream = encode("lf.a2a.v1.StreamResponse", &json!({"task": task}));
        let task_descriptor = descriptor("lf.a2a.v1.Task");
        let pruned = prune(&bytes, &task_descriptor).unwrap();
        let read = DynamicMessage::decode(task_descriptor.clone(), &pruned[..]).unwrap();
        let mut expected = task.clone();
        expected.as_object_mut().unwrap().remove("history");
        let reread = DynamicMessage::deserialize(task_descriptor, &expected).unwrap();
        assert_eq!(read.encode_to_vec(), reread.encode_to_vec());
        let in_stream = prune(&stream, &descriptor("lf.a2a.v1.StreamResponse")).unwrap();
        let stream_read =
            DynamicMessage::decode(descriptor("lf.a2a.v1.StreamResponse"), &in_stream[..]).unwrap();
        let expected = DynamicMessage::deserialize(
            descriptor("lf.a2a.v1.StreamResponse"),
            &json!({"task": expected}),
        )
        .unwrap();
        assert_eq!(
            stream_read.encode_to_vec(),
            expected.encode_to_vec(),
            "history cut at depth too"
        );
    }

    #[test]
    fn many_small_fields_or_deep_nesting_are_refused_before_decoding() {
        // 40,000 parts of one byte each: small on the wire, a large tree decoded.
        let mut message = Vec::new();
        for _ in 0..40_000 {
            message.extend_from_slice(&[0x2a, 0x02, 0x0a, 0x00]); // parts: {text: ""}
        }
        let err = prune(&message, &descriptor("lf.a2a.v1.Message")).unwrap_err();
        assert_eq!(
            err,
            RemoteError::TooLarge {
                what: "a gRPC message's fields",
                limit: MAX_FIELDS
            }
        );
        // A Value holding a list holding a Value…, 60 times: 120 messages deep.
        let mut nested = Vec::new();
        for _ in 0..60 {
            let mut list = vec![0x0a]; // ListValue.values
            put_varint(nested.len() as u64, &mut list);
            list.extend_from_slice(&nested);
            nested = vec![0x32]; // Value.list_value
            put_varint(list.len() as u64, &mut nested);
            nested.extend_from_slice(&list);
        }
        let err = prune(&nested, &descriptor("google.protobuf.Value")).unwrap_err();
        assert_eq!(
            err,
            RemoteError::TooLarge {
                what: "a gRPC message's nesting",
                limit: MAX_DEPTH
            }
        );
        assert!(err.to_string().contains("100-level limit"), "{err}");
        let cut = prune(&[0x0a, 0x05, b'a'], &descriptor("lf.a2a.v1.Task")).unwrap_err();
        assert!(err_is_unreadable(&cut), "{cut}");
    }

    fn err_is_unreadable(err: &RemoteError) -> bool {
        matches!(err, RemoteError::InvalidResponse(m) if m.contains("does not read"))
    }
}

//! a2a.proto's messages as 1.0's JSON and back. A2A 1.0's JSON is the ProtoJSON form of
//! the same messages, so the JSON the other bindings send is what the gRPC binding
//! encodes, and what it decodes is read by the same reader as theirs.

use std::sync::OnceLock;

use bytes::Buf as _;
use prost::Message as _;
use prost_reflect::{
    DescriptorPool, DeserializeOptions, DynamicMessage, MessageDescriptor, SerializeOptions,
};
use serde_json::Value;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

use super::prune;
use crate::error::RemoteError;

const SERVICE: &str = "lf.a2a.v1.A2AService";

static POOL: OnceLock<Result<DescriptorPool, String>> = OnceLock::new();

/// The descriptors compiled from `proto/` at build time.
fn pool() -> Result<&'static DescriptorPool, RemoteError> {
    POOL.get_or_init(|| {
        DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/a2a.bin"))[..])
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| RemoteError::Transport(format!("the gRPC descriptors do not load: {e}")))
}

/// One of the service's methods: its path and what it takes and answers.
pub struct Method {
    pub path: http::uri::PathAndQuery,
    pub input: MessageDescriptor,
    pub output: MessageDescriptor,
}

/// The method 1.0 names `operation` (gRPC's method names are 1.0's operation names).
pub fn method(operation: &str) -> Result<Method, RemoteError> {
    let unknown = || RemoteError::Transport(format!("a2a.proto has no method {operation}"));
    let method = pool()?
        .get_service_by_name(SERVICE)
        .and_then(|service| service.methods().find(|m| m.name() == operation))
        .ok_or_else(unknown)?;
    let path = format!("/{SERVICE}/{operation}")
        .parse()
        .map_err(|_| unknown())?;
    Ok(Method {
        path,
        input: method.input(),
        output: method.output(),
    })
}

/// A call's 1.0 JSON params as the method's request message. Fields the proto does not
/// have are left out, as an agent reading JSON would ignore them.
pub fn request(method: &Method, params: &Value) -> Result<DynamicMessage, RemoteError> {
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    DynamicMessage::deserialize_with_options(method.input.clone(), params, &options).map_err(|e| {
        RemoteError::InvalidResponse(format!(
            "the {} request does not fit a2a.proto: {e}",
            method.input.name()
        ))
    })
}

/// A message as 1.0's JSON text (enums by name, fields by their JSON names).
pub fn json(message: &DynamicMessage) -> Result<Vec<u8>, RemoteError> {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::new(&mut out);
    message
        .serialize_with_options(&mut serializer, &SerializeOptions::new())
        .map_err(|e| {
            RemoteError::InvalidResponse(format!("a gRPC answer has no JSON form: {e}"))
        })?;
    Ok(out)
}

/// The first `ErrorInfo` reason in a `google.rpc.Status` (gRPC's
/// `grpc-status-details-bin`), each detail read by its own type, so one the stand-in
/// does not know cannot hide it.
pub fn error_reason(details: &[u8]) -> Option<String> {
    let pool = pool().ok()?;
    let status =
        DynamicMessage::decode(pool.get_message_by_name("google.rpc.Status")?, details).ok()?;
    let error_info = pool.get_message_by_name("google.rpc.ErrorInfo")?;
    let any = status.get_field_by_name("details")?;
    any.as_list()?.iter().find_map(|detail| {
        let detail = detail.as_message()?;
        let type_url = detail.get_field_by_name("type_url")?;
        if !type_url.as_str()?.ends_with("/google.rpc.ErrorInfo") {
            return None;
        }
        let value = detail.get_field_by_name("value")?;
        let info = DynamicMessage::decode(error_info.clone(), value.as_bytes()?.clone()).ok()?;
        let reason = info.get_field_by_name("reason")?;
        Some(reason.as_str()?.to_owned())
    })
}

/// A refusal of the agent's answer, carried through tonic as its status's source so the
/// binding reads it back as it was.
fn refusal(err: RemoteError) -> Status {
    let mut status = Status::internal(err.to_string());
    status.set_source(std::sync::Arc::new(err));
    status
}

/// Test support: a message `name` (a2a.proto's, or google.rpc's) from 1.0's JSON, as
/// bytes; and back.
#[cfg(test)]
pub mod test_support {
    use super::*;

    pub fn encode(name: &str, json: &Value) -> Vec<u8> {
        let descriptor = pool().unwrap().get_message_by_name(name).unwrap();
        DynamicMessage::deserialize(descriptor, json)
            .unwrap()
            .encode_to_vec()
    }

    pub fn descriptor(name: &str) -> MessageDescriptor {
        pool().unwrap().get_message_by_name(name).unwrap()
    }

    pub fn decode(name: &str, bytes: &[u8]) -> Value {
        let descriptor = pool().unwrap().get_message_by_name(name).unwrap();
        let message = DynamicMessage::decode(descriptor, bytes).unwrap();
        serde_json::from_slice(&json(&message).unwrap()).unwrap()
    }
}

/// Encodes the request, decodes answers as `output`'s messages.
pub struct DynamicCodec {
    pub output: MessageDescriptor,
}

impl Codec for DynamicCodec {
    type Encode = DynamicMessage;
    type Decode = DynamicMessage;
    type Encoder = DynamicEncoder;
    type Decoder = DynamicDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        DynamicEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        DynamicDecoder(self.output.clone())
    }
}

pub struct DynamicEncoder;

impl Encoder for DynamicEncoder {
    type Item = DynamicMessage;
    type Error = Status;

    fn encode(&mut self, item: Self::Item, dst: &mut EncodeBuf<'_>) -> Result<(), Self::Error> {
        item.encode(dst)
            .map_err(|e| Status::internal(format!("cannot encode the request: {e}")))
    }
}

pub struct DynamicDecoder(MessageDescriptor);

impl Decoder for DynamicDecoder {
    type Item = DynamicMessage;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Self::Item>, Self::Error> {
        let bytes = src.copy_to_bytes(src.remaining());
        let kept = prune::prune(&bytes, &self.0).map_err(refusal)?;
        drop(bytes);
        DynamicMessage::decode(self.0.clone(), &kept[..])
            .map(Some)
            .map_err(|e| {
                refusal(RemoteError::InvalidResponse(format!(
                    "the answer is not a2a.proto's: {e}"
                )))
            })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn round_trip(operation: &str, params: Value) -> Value {
        let method = method(operation).expect("method");
        let message = request(&method, &params).expect("request");
        let bytes = message.encode_to_vec();
        let back = DynamicMessage::decode(method.input.clone(), &bytes[..]).expect("decode");
        serde_json::from_slice(&json(&back).expect("json")).expect("JSON")
    }

    #[test]
    fn a_turn_travels_as_the_same_json_it_was() {
        let params = json!({
            "message": {
                "messageId": "m-1", "role": "ROLE_USER", "contextId": "c-1",
                "parts": [
                    {"text": "make a widget"},
                    {"data": {"size": 3, "colours": ["blue"]}, "mediaType": "application/json"},
                    {"url": "https://example.com/a.png", "filename": "a.png"},
                    {"raw": "aGk="},
                ],
                "metadata": {"k": "v"},
            },
            "configuration": {"returnImmediately": true},
        });
        let mut sent = params.clone();
        // google.protobuf.Struct has only doubles.
        sent["message"]["parts"][1]["data"]["size"] = json!(3.0);
        assert_eq!(round_trip("SendMessage", params), sent);
    }

    #[test]
    fn a_task_reads_back_with_its_state_by_name_and_its_time_in_rfc_3339() {
        let method = method("GetTask").expect("method");
        let task = json!({
            "id": "t-1", "contextId": "c-1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-12-06T17:00:00Z"},
            "artifacts": [{"artifactId": "a-1", "parts": [{"text": "draft"}]}],
        });
        let message = DynamicMessage::deserialize(method.output.clone(), &task).expect("task");
        let back: Value = serde_json::from_slice(&json(&message).expect("json")).expect("JSON");
        assert_eq!(back, task);
    }

    #[test]
    fn a_field_the_proto_lacks_is_left_out_and_a_wrong_type_is_refused_naming_the_message() {
        let sent = round_trip(
            "GetTask",
            json!({"id": "t-1", "historyLength": 0, "kind": "x"}),
        );
        assert_eq!(sent, json!({"id": "t-1", "historyLength": 0}));
        let method = method("GetTask").expect("method");
        let err = request(&method, &json!({"id": 7})).expect_err("a number is no id");
        assert!(err.to_string().contains("GetTaskRequest"), "{err}");
    }

    /// Each call the 1.0 dialect builds (a tenant's included) is a method of the service,
    /// and its params are that method's request.
    #[test]
    fn every_call_the_stand_in_makes_is_a_method_of_the_service_and_fits_its_request() {
        use crate::a2a::dialect::{Calls, Dialect};
        let calls = Calls {
            dialect: Dialect::V1,
            tenant: Some("acme".into()),
        };
        let message = json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]});
        let config = json!({"id": "c-1", "taskId": "t-1", "url": "https://p.example/",
            "token": "x", "authentication": {"scheme": "Bearer", "credentials": "x"}});
        for call in [
            calls.send(&message, true),
            calls.stream(&message),
            calls.get("t-1"),
            calls.extended_card(),
            calls.subscribe("t-1"),
            calls.cancel("t-1"),
            calls.create_push(&config, "t-1", "c-1"),
            calls.delete_push("t-1", "c-1"),
        ] {
            let found = method(call.operation).expect(call.operation);
            assert_eq!(
                found.path.as_str(),
                format!("/lf.a2a.v1.A2AService/{}", call.operation)
            );
            let sent = request(&found, &call.params).expect(call.operation);
            let back: Value = serde_json::from_slice(&json(&sent).expect("json")).expect("JSON");
            assert_eq!(back["tenant"], "acme", "{}: {back}", call.operation);
        }
        assert!(method("ListEverything").is_err());
    }
}

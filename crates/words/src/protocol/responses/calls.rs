//! A streamed function call's announcement (`response.output_item.added` with a
//! `function_call` item): the call's id and name, which a session's tool result names.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::super::chunk::ChunkInfo;
use super::parts::string;

/// The call an announced item is, when it is a `function_call` whose `call_id` and `name` are
/// strings; anything else carries nothing (the item is informational: a reasoning or message
/// item, or a server's own).
pub(super) fn added(item: Option<&RawValue>) -> ChunkInfo<'_> {
    #[derive(Deserialize)]
    struct Item<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<&'a RawValue>,
        #[serde(borrow)]
        call_id: Option<&'a RawValue>,
        #[serde(borrow)]
        name: Option<&'a RawValue>,
    }
    let mut info = ChunkInfo::default();
    let Some(item) = item.and_then(|i| serde_json::from_str::<Item<'_>>(i.get()).ok()) else {
        return info;
    };
    let kind = item.kind.and_then(string).and_then(|s| s.raw());
    if kind == Some("function_call") {
        info.tool_call.id = item.call_id.and_then(string);
        info.tool_call.name = item.name.and_then(string);
    }
    info
}

#[cfg(test)]
mod tests {
    use crate::protocol::{Api, Event};

    fn chunk(data: &str) -> crate::protocol::ChunkInfo<'_> {
        match Api::RESPONSES.kind().decode_event(data).unwrap() {
            Event::Chunk(c) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_function_call_item_names_its_call_and_other_items_nothing() {
        let c = chunk(
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_9","name":"get","arguments":""}}"#,
        );
        assert_eq!(c.tool_call.id.unwrap().decode(), "call_9");
        assert_eq!(c.tool_call.name.unwrap().decode(), "get");
        for other in [
            r#"{"type":"response.output_item.added","item":{"type":"message","id":"m"}}"#,
            r#"{"type":"response.output_item.added","item":{"type":"function_call","call_id":7}}"#,
            r#"{"type":"response.output_item.added","item":"x"}"#,
            r#"{"type":"response.output_item.added"}"#,
        ] {
            let c = chunk(other);
            assert!(c.tool_call.id.is_none() && !c.has_output(), "{other}");
        }
    }
}

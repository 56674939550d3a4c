//! The GraphQL form of the contract (`contract/graphql/schema.graphql`):
//! one root field per operation (a query for the REST `GET` operations, a
//! mutation for the `POST` ones), output types that mirror the messages
//! field for field under their canonical JSON names, and the GraphQL-only
//! workloads that select a few fields or several roots in one request.
//!
//! A request is `{"query", "operationName", "variables"}` (the GraphQL over
//! HTTP form); a response is `{"data": {"<root field>": <value>}}`, where
//! the value is the message's canonical JSON restricted to the selection,
//! with `null` for a selected field the message leaves unset (an `optional`
//! field, the other member of a oneof). Decoding drops those nulls and reads
//! the rest as canonical JSON, so a GraphQL response decodes to exactly the
//! message REST returns.

use serde_json::{Map, Value};

use crate::{DecodeError, Message, MessageKind, Operation};

/// The media type of a GraphQL request and response (GraphQL over HTTP
/// also allows `application/graphql-response+json` for responses).
pub const CONTENT_TYPE: &str = "application/json";

/// The endpoint every GraphQL server serves.
pub const PATH: &str = "/graphql";

pub mod persisted;

/// One selected field: a leaf (scalar or enum), or an object with its own
/// selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// A scalar or enum field.
    Leaf(&'static str),
    /// An object field and what is selected in it.
    Object(&'static str, &'static [Field]),
}

use Field::{Leaf as L, Object as O};

const STATUS: &[Field] = &[
    L("serviceName"),
    L("regionCode"),
    L("statusMessage"),
    L("recentErrors"),
    L("cpuUtilization"),
    L("memoryUtilization"),
    L("averageResponseMillis"),
    L("activeDeviceCount"),
];
const DEVICE: &[Field] = &[L("deviceId"), L("state"), L("readingCount")];
const LOCATION: &[Field] = &[L("warehouse"), L("aisle"), L("shelf"), L("bin")];
const ITEM: &[Field] = &[
    L("id"),
    L("name"),
    L("category"),
    L("unitPrice"),
    L("weightKg"),
    L("quantity"),
    L("inStock"),
    L("fragile"),
    O("location", LOCATION),
    L("description"),
    L("supplier"),
];
const PRODUCT: &[Field] = &[L("id"), L("name"), L("description"), L("price"), L("stock"), L("tags")];
const PERSON: &[Field] = &[
    L("id"),
    L("firstName"),
    L("lastName"),
    L("email"),
    L("age"),
    L("active"),
    L("balance"),
];
const PET: &[Field] = &[L("name"), L("color")];
const HELLO: &[Field] = &[
    L("name"),
    L("d"),
    L("f"),
    L("b"),
    L("n"),
    L("l"),
    L("c1"),
    L("c2"),
    O("pets", PET),
];

/// Everything a message of `kind` holds, as a selection; `None` for
/// `Empty`, which is the scalar `Empty` (always `{}`), since a GraphQL
/// object type needs at least one field.
pub fn full_selection(kind: MessageKind) -> Option<&'static [Field]> {
    const S: fn(&'static [Field]) -> Option<&'static [Field]> = Some;
    match kind {
        MessageKind::Empty => None,
        MessageKind::InventoryStatus => S(STATUS),
        MessageKind::DeviceList => S(&[O("devices", DEVICE)]),
        MessageKind::ItemList => S(&[O("items", ITEM)]),
        MessageKind::Product => S(PRODUCT),
        MessageKind::CloneRequest => S(&[L("text"), L("times")]),
        MessageKind::CloneResponse => S(&[L("texts")]),
        MessageKind::IntegerValue => S(&[L("value")]),
        MessageKind::IntegerList => S(&[L("values")]),
        MessageKind::ObjectList => S(&[O("people", PERSON)]),
        MessageKind::FileRequest => S(&[L("name")]),
        MessageKind::FileContent => S(&[L("name"), L("content")]),
        MessageKind::EchoMessage => S(&[L("payload")]),
        MessageKind::HelloRequest => S(&[O("request", HELLO)]),
        MessageKind::HelloReply => S(&[O("response", HELLO)]),
    }
}

/// How an operation's request travels: no argument, the `name` argument
/// (`file(name:)`), or the whole request message as the `input` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arguments {
    /// No arguments (an `Empty` request).
    None,
    /// `name: String!` (`GetFile`).
    Name,
    /// `input: <Message>Input!` (the `POST` operations).
    Input(&'static str),
}

/// An operation's root field: its name, whether it is a mutation, and its
/// arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Root {
    /// The field name, e.g. `inventoryL`, `echoProduct`.
    pub field: &'static str,
    /// A mutation (the REST `POST` operations) rather than a query.
    pub mutation: bool,
    /// What the request carries.
    pub arguments: Arguments,
}

/// The root field serving `op`.
pub fn root(op: Operation) -> Root {
    let (field, arguments) = match op {
        Operation::GetInventoryXs => ("inventoryXs", Arguments::None),
        Operation::GetInventoryS => ("inventoryS", Arguments::None),
        Operation::GetInventoryM => ("inventoryM", Arguments::None),
        Operation::GetInventoryL => ("inventoryL", Arguments::None),
        Operation::EchoProduct => ("echoProduct", Arguments::Input("ProductInput")),
        Operation::ModifyProduct => ("modifyProduct", Arguments::Input("ProductInput")),
        Operation::CloneText => ("cloneText", Arguments::Input("CloneRequestInput")),
        Operation::GetInteger => ("integer", Arguments::None),
        Operation::GetIntegers => ("integers", Arguments::None),
        Operation::GetObjects => ("objects", Arguments::None),
        Operation::GetFile => ("file", Arguments::Name),
        Operation::Echo => ("echo", Arguments::Input("EchoMessageInput")),
        Operation::SayHello => ("sayHello", Arguments::Input("HelloRequestInput")),
    };
    Root {
        field,
        mutation: op.http_method() == crate::HttpMethod::Post,
        arguments,
    }
}

/// The operation whose root field is `field`.
pub fn operation_of_field(field: &str) -> Option<Operation> {
    Operation::ALL.iter().copied().find(|op| root(*op).field == field)
}

/// Writes a selection set: `{ a b c { d } }`.
pub fn write_selection(out: &mut String, fields: &[Field]) {
    out.push('{');
    for f in fields {
        out.push(' ');
        match f {
            Field::Leaf(name) => out.push_str(name),
            Field::Object(name, inner) => {
                out.push_str(name);
                out.push(' ');
                write_selection(out, inner);
            }
        }
    }
    out.push_str(" }");
}

/// The query document of `op` selecting everything, e.g.
/// `query GetInteger { integer { value } }` or
/// `mutation Echo($input: EchoMessageInput!) { echo(input: $input) { payload } }`.
pub fn document(op: Operation) -> String {
    let r = root(op);
    let mut out = String::from(if r.mutation { "mutation " } else { "query " });
    out.push_str(op.name());
    let call = match r.arguments {
        Arguments::None => r.field.to_owned(),
        Arguments::Name => {
            out.push_str("($name: String!)");
            format!("{}(name: $name)", r.field)
        }
        Arguments::Input(ty) => {
            out.push_str(&format!("($input: {ty}!)"));
            format!("{}(input: $input)", r.field)
        }
    };
    out.push_str(" { ");
    out.push_str(&call);
    if let Some(sel) = full_selection(op.response_kind()) {
        out.push(' ');
        write_selection(&mut out, sel);
    }
    out.push_str(" }");
    out
}

/// The variables carrying `request` for `op`.
fn variables(op: Operation, request: &Message) -> Value {
    let mut vars = Map::new();
    match (root(op).arguments, request) {
        (Arguments::None, _) => {}
        (Arguments::Name, Message::FileRequest(r)) => {
            vars.insert("name".into(), Value::from(r.name.clone()));
        }
        (Arguments::Name, other) => {
            let json: Value = serde_json::from_slice(&other.to_json()).unwrap_or_default();
            vars.insert("name".into(), json.get("name").cloned().unwrap_or_default());
        }
        (Arguments::Input(_), m) => {
            let json = serde_json::from_slice(&m.to_json()).expect("canonical JSON parses");
            vars.insert("input".into(), json);
        }
    }
    Value::Object(vars)
}

/// The request body (GraphQL over HTTP, POST): `query`, `operationName`,
/// `variables`, in that order.
pub fn encode_request(op: Operation, request: &Message) -> Vec<u8> {
    body(&document(op), op.name(), variables(op, request))
}

/// A GraphQL request body of a document, operation name and variables.
pub fn body(query: &str, operation_name: &str, variables: Value) -> Vec<u8> {
    // serde_json's map keeps keys sorted; spell the object out to keep the
    // conventional order.
    let mut out = Vec::with_capacity(query.len() + 64);
    out.extend_from_slice(b"{\"query\":");
    out.extend_from_slice(&serde_json::to_vec(query).expect("a string serializes"));
    out.extend_from_slice(b",\"operationName\":");
    out.extend_from_slice(&serde_json::to_vec(operation_name).expect("a string serializes"));
    out.extend_from_slice(b",\"variables\":");
    out.extend_from_slice(&serde_json::to_vec(&variables).expect("JSON serializes"));
    out.push(b'}');
    out
}

/// Writes `value` restricted to `fields`, in selection order (as a GraphQL
/// server writes it), with `null` for a selected member `value` lacks;
/// lists are restricted element by element.
pub fn write_projected(out: &mut Vec<u8>, value: &Value, fields: &[Field]) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_projected(out, v, fields);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, f) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let name = match f {
                    Field::Leaf(name) | Field::Object(name, _) => *name,
                };
                write_json(out, &Value::from(name));
                out.push(b':');
                match (f, map.get(name)) {
                    (_, None) => out.extend_from_slice(b"null"),
                    (Field::Leaf(_), Some(v)) => write_json(out, v),
                    (Field::Object(_, inner), Some(v)) => write_projected(out, v, inner),
                }
            }
            out.push(b'}');
        }
        other => write_json(out, other),
    }
}

fn write_json(out: &mut Vec<u8>, v: &Value) {
    serde_json::to_writer(out, v).expect("JSON serializes");
}

/// `message` as a GraphQL server returns it under its root field with
/// everything selected (JSON bytes).
pub fn response_value(message: &Message) -> Vec<u8> {
    let json: Value = serde_json::from_slice(&message.to_json()).expect("canonical JSON parses");
    let mut out = Vec::new();
    match full_selection(message.kind()) {
        Some(sel) => write_projected(&mut out, &json, sel),
        None => write_json(&mut out, &json),
    }
    out
}

/// The response body of `op` returning `message`: `{"data":{"<field>":...}}`.
pub fn encode_response(op: Operation, message: &Message) -> Vec<u8> {
    envelope(&[(root(op).field, response_value(message))])
}

/// `{"data":{...}}` holding each root field's JSON bytes, in order.
pub fn envelope(roots: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = b"{\"data\":{".to_vec();
    for (i, (field, value)) in roots.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(&mut out, &Value::from(*field));
        out.push(b':');
        out.extend_from_slice(value);
    }
    out.extend_from_slice(b"}}");
    out
}

/// Removes every `null` member, recursively (a selected field the message
/// leaves unset comes back as `null`).
pub fn drop_nulls(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, drop_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(drop_nulls).collect()),
        other => other,
    }
}

fn invalid(what: impl Into<String>) -> DecodeError {
    DecodeError::Graphql(what.into())
}

/// The `data` member of a GraphQL response body; an `errors` member (a
/// partial or failed result) is an error naming the first message.
pub fn response_data(bytes: &[u8]) -> Result<Map<String, Value>, DecodeError> {
    let v: Value = serde_json::from_slice(bytes)?;
    let Value::Object(mut top) = v else {
        return Err(invalid("a GraphQL response is a JSON object"));
    };
    if let Some(errors) = top.get("errors") {
        let first = errors
            .get(0)
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("(no message)");
        return Err(invalid(format!("GraphQL errors: {first}")));
    }
    match top.remove("data") {
        Some(Value::Object(data)) => Ok(data),
        _ => Err(invalid("no \"data\" object in the GraphQL response")),
    }
}

/// Decodes a response body of `op` to the message under its root field.
pub fn decode_response(op: Operation, bytes: &[u8]) -> Result<Message, DecodeError> {
    let mut data = response_data(bytes)?;
    let field = root(op).field;
    let value = data
        .remove(field)
        .ok_or_else(|| invalid(format!("no field {field:?} in the GraphQL data")))?;
    if let Some(extra) = data.keys().next() {
        return Err(invalid(format!("unexpected field {extra:?} in the GraphQL data")));
    }
    let bytes = serde_json::to_vec(&drop_nulls(value))?;
    Message::from_json(op.response_kind(), &bytes)
}

/// Decodes a request body of `op` as [`encode_request`] writes it (the
/// request message from the variables; the document is not parsed).
pub fn decode_request(op: Operation, bytes: &[u8]) -> Result<Message, DecodeError> {
    let v: Value = serde_json::from_slice(bytes)?;
    let vars = v.get("variables").cloned().unwrap_or_default();
    let json = match root(op).arguments {
        Arguments::None => Value::Object(Map::new()),
        Arguments::Name => {
            let mut m = Map::new();
            m.insert("name".into(), vars.get("name").cloned().unwrap_or_default());
            Value::Object(m)
        }
        Arguments::Input(_) => vars
            .get("input")
            .cloned()
            .ok_or_else(|| invalid("no \"input\" variable"))?,
    };
    Message::from_json(op.request_kind(), &serde_json::to_vec(&json)?)
}

/// A GraphQL-only workload: several roots (each an operation with an empty
/// request) with a selection each, in one request. What it shows: fields
/// left out are never built or sent (over-fetching avoided), and several
/// REST calls become one round trip.
#[derive(Debug, Clone, Copy)]
pub struct GraphqlWorkload {
    /// The name, e.g. `graphql.items-ids`.
    pub name: &'static str,
    /// What it asks for, in one line.
    pub description: &'static str,
    /// The operation name in the document.
    pub operation_name: &'static str,
    /// The roots and what each selects.
    pub roots: &'static [(Operation, &'static [Field])],
    /// The REST workloads that return a superset of the same data (what REST
    /// needs for it: one call each).
    pub rest_equivalent: &'static [&'static str],
}

impl GraphqlWorkload {
    /// The query document.
    pub fn document(&self) -> String {
        let mut out = format!("query {} {{", self.operation_name);
        for (op, sel) in self.roots {
            out.push(' ');
            out.push_str(root(*op).field);
            out.push(' ');
            write_selection(&mut out, sel);
        }
        out.push_str(" }");
        out
    }

    /// The request body.
    pub fn request(&self) -> Vec<u8> {
        body(&self.document(), self.operation_name, Value::Object(Map::new()))
    }

    /// The expected response body.
    pub fn response(&self, dataset: &crate::Dataset) -> Vec<u8> {
        let mut roots = Vec::new();
        for (op, sel) in self.roots {
            let empty = Message::Empty(crate::pb::bench::Empty {});
            let message = op.respond(&empty, dataset).expect("an empty request is valid");
            let json: Value = serde_json::from_slice(&message.to_json()).expect("canonical JSON parses");
            let mut value = Vec::new();
            write_projected(&mut value, &json, sel);
            roots.push((root(*op).field, value));
        }
        envelope(&roots)
    }
}

/// The GraphQL-only workloads, in a stable order. They live apart from
/// [`crate::workload::ALL`] (`contract/graphql/workloads.json`), since no
/// other protocol can ask for part of a message.
pub static WORKLOADS: &[GraphqlWorkload] = &[
    GraphqlWorkload {
        name: "graphql.items-ids",
        description: "id and name of the 1,395 items (inventory.l selects all 11 fields)",
        operation_name: "ItemIds",
        roots: &[(Operation::GetInventoryL, &[O("items", &[L("id"), L("name")])])],
        rest_equivalent: &["inventory.l"],
    },
    GraphqlWorkload {
        name: "graphql.devices-ids",
        description: "deviceId of the 480 devices (inventory.m selects all 3 fields)",
        operation_name: "DeviceIds",
        roots: &[(Operation::GetInventoryM, &[O("devices", &[L("deviceId")])])],
        rest_equivalent: &["inventory.m"],
    },
    GraphqlWorkload {
        name: "graphql.items-stock",
        description: "id, quantity and the nested location's warehouse of the 1,395 items",
        operation_name: "ItemStock",
        roots: &[(
            Operation::GetInventoryL,
            &[O("items", &[L("id"), L("quantity"), O("location", &[L("warehouse")])])],
        )],
        rest_equivalent: &["inventory.l"],
    },
    GraphqlWorkload {
        name: "graphql.dashboard",
        description: "status, every device and every person in one round trip (REST: three calls)",
        operation_name: "Dashboard",
        roots: &[
            (Operation::GetInventoryS, STATUS),
            (Operation::GetInventoryM, &[O("devices", DEVICE)]),
            (Operation::GetObjects, &[O("people", PERSON)]),
        ],
        rest_equivalent: &["inventory.s", "inventory.m", "tasks.objects"],
    },
    GraphqlWorkload {
        name: "graphql.dashboard-slim",
        description: "the dashboard's status message, device states and names only, in one round trip",
        operation_name: "DashboardSlim",
        roots: &[
            (Operation::GetInventoryS, &[L("statusMessage"), L("activeDeviceCount")]),
            (Operation::GetInventoryM, &[O("devices", &[L("state")])]),
            (Operation::GetObjects, &[O("people", &[L("firstName"), L("lastName")])]),
        ],
        rest_equivalent: &["inventory.s", "inventory.m", "tasks.objects"],
    },
];

/// The GraphQL-only workload called `name`.
pub fn find(name: &str) -> Option<&'static GraphqlWorkload> {
    WORKLOADS.iter().find(|w| w.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dataset, workload};

    #[test]
    fn documents_select_every_field_of_the_canonical_json() {
        // The full selection names exactly the canonical JSON's members, so
        // a GraphQL response decodes to the REST message and back.
        let dataset = Dataset::generate();
        for w in workload::ALL {
            let response = w.operation.respond(&w.request(), &dataset).unwrap();
            let bytes = encode_response(w.operation, &response);
            let back = decode_response(w.operation, &bytes).unwrap_or_else(|e| panic!("{}: {e}", w.name));
            assert_eq!(back, response, "{}", w.name);
            let req = encode_request(w.operation, &w.request());
            assert_eq!(decode_request(w.operation, &req).unwrap(), w.request(), "{}", w.name);
        }
    }

    #[test]
    fn documents_read_as_graphql() {
        assert_eq!(
            document(Operation::GetFile),
            "query GetFile($name: String!) { file(name: $name) { name content } }"
        );
        assert_eq!(
            document(Operation::GetInventoryXs),
            "query GetInventoryXs { inventoryXs }"
        );
        assert_eq!(
            document(Operation::Echo),
            "mutation Echo($input: EchoMessageInput!) { echo(input: $input) { payload } }"
        );
        let l = document(Operation::GetInventoryL);
        assert!(
            l.contains("location { warehouse aisle shelf bin } description supplier"),
            "{l}"
        );
    }

    #[test]
    fn unset_fields_are_null_and_errors_are_refused() {
        let w = workload::find("grpcbench.complex").unwrap();
        let reply = w.operation.respond(&w.request(), &Dataset::generate()).unwrap();
        let text = String::from_utf8(encode_response(w.operation, &reply)).unwrap();
        assert!(text.contains(r#""c1":"of course","c2":null"#), "{text}");
        assert!(
            text.starts_with(r#"{"data":{"sayHello":{"response":{"name":"protobench""#),
            "{text}"
        );
        let err = decode_response(Operation::Echo, br#"{"data":null,"errors":[{"message":"boom"}]}"#).unwrap_err();
        assert_eq!(err.to_string(), "invalid GraphQL response: GraphQL errors: boom");
        let err = decode_response(Operation::Echo, br#"{"data":{"echo":{"payload":"x"},"more":1}}"#).unwrap_err();
        assert!(err.to_string().contains("unexpected field \"more\""), "{err}");
    }

    #[test]
    fn graphql_workloads_select_less_than_rest_returns() {
        let dataset = Dataset::generate();
        let size = |name: &str| {
            let w = workload::find(name).unwrap();
            w.operation.respond(&w.request(), &dataset).unwrap().to_json().len()
        };
        for g in WORKLOADS {
            let rest: usize = g.rest_equivalent.iter().map(|n| size(n)).sum();
            let ours = g.response(&dataset).len();
            assert!(ours < rest + 200, "{}: {ours} B vs REST {rest} B", g.name);
            assert!(g.request().starts_with(br#"{"query":"query "#));
        }
        let ids = find("graphql.items-ids").unwrap().response(&dataset);
        let v: Value = serde_json::from_slice(&ids).unwrap();
        let items = v["data"]["inventoryL"]["items"].as_array().unwrap();
        assert_eq!(items.len(), 1395);
        assert_eq!(items[0].as_object().unwrap().len(), 2);
    }

    /// The type blocks of an SDL text: name -> its field names in order
    /// (descriptions, arguments and types dropped).
    fn sdl_blocks(sdl: &str) -> std::collections::BTreeMap<String, Vec<String>> {
        let mut blocks = std::collections::BTreeMap::new();
        let mut current: Option<(String, Vec<String>)> = None;
        for line in sdl.lines().map(str::trim) {
            if line.starts_with('#') || line.starts_with('"') || line.is_empty() {
                continue;
            }
            if let Some(head) = line.strip_suffix('{') {
                let name = head.split_whitespace().nth(1).unwrap_or_default();
                current = Some((name.to_owned(), Vec::new()));
            } else if line == "}" {
                let (name, fields) = current.take().expect("a block is open");
                blocks.insert(name, fields);
            } else if let Some((_, fields)) = current.as_mut() {
                let end = line.find(['(', ':']).unwrap_or(line.len());
                fields.push(line[..end].trim().to_owned());
            }
        }
        blocks
    }

    #[test]
    fn the_schema_file_matches_the_roots_and_selections() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../contract/graphql/schema.graphql");
        let sdl = std::fs::read_to_string(path).unwrap();
        let blocks = sdl_blocks(&sdl);
        // Every operation's root field, in its root type, with its arguments.
        for op in Operation::ALL {
            let r = root(*op);
            let ty = if r.mutation { "Mutation" } else { "Query" };
            assert!(blocks[ty].iter().any(|f| f == r.field), "{ty}.{} missing", r.field);
            let line = sdl
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with(&format!("{}:", r.field)) || l.starts_with(&format!("{}(", r.field)))
                .unwrap();
            match r.arguments {
                Arguments::None => assert!(!line.contains('('), "{line}"),
                Arguments::Name => assert!(line.contains("(name: String!)"), "{line}"),
                Arguments::Input(t) => assert!(line.contains(&format!("(input: {t}!)")), "{line}"),
            }
        }
        assert_eq!(blocks["Query"].len() + blocks["Mutation"].len(), Operation::ALL.len());
        // Every output type's fields are the full selection, in order; an
        // input type has the same fields as its output type.
        let mut seen = 0;
        let mut check = |name: &str, sel: &[Field]| {
            let names: Vec<String> = sel
                .iter()
                .map(|f| match f {
                    Field::Leaf(n) | Field::Object(n, _) => (*n).to_owned(),
                })
                .collect();
            assert_eq!(blocks.get(name), Some(&names), "type {name}");
            seen += 1;
        };
        for op in Operation::ALL {
            for kind in [op.request_kind(), op.response_kind()] {
                if let Some(sel) = full_selection(kind) {
                    let name = format!("{kind:?}");
                    if blocks.contains_key(&name) {
                        check(&name, sel);
                    }
                }
            }
        }
        check("Item", ITEM);
        check("Location", LOCATION);
        check("Device", DEVICE);
        check("Person", PERSON);
        check("Hello", HELLO);
        check("Pet", PET);
        for (input, sel) in [
            ("ProductInput", PRODUCT),
            ("HelloInput", HELLO),
            ("PetInput", PET),
            ("EchoMessageInput", &[L("payload")][..]),
            ("CloneRequestInput", &[L("text"), L("times")][..]),
            ("HelloRequestInput", &[O("request", HELLO)][..]),
        ] {
            check(input, sel);
        }
        assert!(seen >= 25, "{seen} types checked");
    }
}

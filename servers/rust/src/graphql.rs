//! GraphQL (`contract/graphql/schema.graphql`) with async-graphql on axum:
//! `POST /graphql`, a JSON body `{"query", "operationName", "variables"}`,
//! and `GET /graphql` with the same in the query string, where a document
//! may be named by its SHA-256 (persisted queries, the `graphql-get`
//! protocol: [`persisted`]). Each listener keeps at most
//! [`persisted::CAPACITY`] documents, dropping the oldest.
//!
//! Every root field is one call of the contract: it is validated, gets the
//! injected service time and the failure draw ([`Core`]), so a request with
//! several root fields (the `graphql.dashboard` workload) costs what the
//! REST calls it replaces cost. Output types resolve from the shared
//! dataset by index (no copy of the source objects); async-graphql builds
//! the selected fields into a value tree and serializes it, which is
//! GraphQL's per-field cost.
//!
//! Untrusted input: the body is read under `PROTOBENCH_MAX_REQUEST_BYTES`
//! and the read timeout (413, 408), a body that is not JSON or not a GraphQL
//! request is 400 with the contract's JSON error, and a document deeper
//! than [`MAX_DEPTH`] or over [`MAX_COMPLEXITY`] (aliases repeating a large
//! root field to multiply the response) is refused with a GraphQL error
//! before it runs.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use async_graphql::{
    Context, EmptySubscription, Enum, ErrorExtensions, InputObject, InputValueError, InputValueResult, Object, Scalar,
    ScalarType, Schema, Value,
};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine as _;
use protobench_contract::Dataset;
use protobench_contract::graphql::persisted;
use protobench_contract::pb::{bench, helloworld};

use crate::body::{self, BodyError};
use crate::core::{CallError, Core, INJECTED_FAILURE};
use crate::json_error::error;

/// The deepest selection a document may have (the contract's deepest is 4:
/// `sayHello { response { pets { name } } }`).
pub(crate) const MAX_DEPTH: usize = 16;

/// The most fields a document may select, counting each field once (the
/// contract's largest document selects 26); it bounds how many times
/// aliases can repeat a large root field in one request.
pub(crate) const MAX_COMPLEXITY: usize = 256;

/// The schema type of the server.
pub(crate) type BenchSchema = Schema<Query, Mutation, EmptySubscription>;

/// The schema with its limits and the shared core.
pub(crate) fn schema(core: Arc<Core>) -> BenchSchema {
    Schema::build(Query, Mutation, EmptySubscription)
        .data(core)
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .limit_recursive_depth(32)
        .finish()
}

/// `POST /graphql` and `GET /graphql` (persisted queries, or a query in
/// the query string); other paths 404, other methods 405. Each router
/// keeps its own store of persisted documents.
pub(crate) fn router(core: Arc<Core>) -> Router {
    let schema = schema(core.clone());
    let state = Served {
        core,
        schema,
        store: Arc::new(Mutex::new(Store::default())),
    };
    Router::new()
        .route(
            protobench_contract::graphql::PATH,
            post(handle).get(handle_get).fallback(|method: Method| async move {
                let mut response = error(
                    StatusCode::METHOD_NOT_ALLOWED,
                    &format!("method {method} is not allowed on /graphql; allowed: GET, POST"),
                );
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, POST"));
                response
            }),
        )
        .fallback(|method: Method, uri: axum::http::Uri| async move {
            error(
                StatusCode::NOT_FOUND,
                &format!(
                    "no operation at {method} {}; GraphQL is served at POST /graphql and GET /graphql",
                    uri.path()
                ),
            )
        })
        .with_state(state)
}

/// What a GraphQL listener's handlers share.
#[derive(Clone)]
struct Served {
    core: Arc<Core>,
    schema: BenchSchema,
    store: Arc<Mutex<Store>>,
}

/// The persisted documents by hash, at most [`persisted::CAPACITY`]; when
/// full the oldest is dropped (first in, first out).
#[derive(Default)]
struct Store {
    documents: HashMap<String, Arc<str>>,
    order: VecDeque<String>,
}

impl Store {
    fn get(&self, hash: &str) -> Option<Arc<str>> {
        self.documents.get(hash).cloned()
    }

    fn put(&mut self, hash: String, document: &str) {
        if self.documents.contains_key(&hash) {
            return;
        }
        if self.order.len() >= persisted::CAPACITY
            && let Some(oldest) = self.order.pop_front()
        {
            self.documents.remove(&oldest);
        }
        self.order.push_back(hash.clone());
        self.documents.insert(hash, document.into());
    }
}

async fn handle(State(served): State<Served>, request: Request) -> Response {
    let _in_flight = served.core.enter();
    let core = &served.core;
    if !body::has_content_type(request.headers(), "application/json") {
        let found = body::content_type(request.headers());
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!("content type {found} is not supported; expected application/json"),
        );
    }
    let version = request.version();
    let bytes = match body::read(request, core.max_request_bytes, core.read_timeout).await {
        Ok(bytes) => bytes,
        Err(err @ BodyError::TooLarge { .. }) => return error(StatusCode::PAYLOAD_TOO_LARGE, &err.to_string()),
        Err(err @ BodyError::Timeout { .. }) => {
            let mut response = error(StatusCode::REQUEST_TIMEOUT, &err.to_string());
            body::close_connection(version, &mut response);
            return response;
        }
        Err(err) => return error(StatusCode::BAD_REQUEST, &err.to_string()),
    };
    let request: async_graphql::Request = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("the body is not a GraphQL request ({{\"query\", \"operationName\", \"variables\"}}): {e}"),
            );
        }
    };
    execute(&served, request, false).await
}

/// `GET /graphql?operationName=..&variables=..&extensions=..` (a persisted
/// query by its hash), or with `query=` (the document itself).
async fn handle_get(State(served): State<Served>, uri: axum::http::Uri) -> Response {
    let _in_flight = served.core.enter();
    match get_request(uri.query().unwrap_or("")) {
        Ok(request) => execute(&served, request, true).await,
        Err(message) => gql_error(StatusCode::BAD_REQUEST, &message),
    }
}

/// A GET's query string as a GraphQL request (async-graphql's own reader
/// expects `operation_name`, not GraphQL over HTTP's `operationName`).
fn get_request(query_string: &str) -> Result<async_graphql::Request, String> {
    let params = persisted::get_params(query_string)?;
    let mut request = async_graphql::Request::new(params.query.unwrap_or_default());
    if let Some(name) = params.operation_name {
        request = request.operation_name(name);
    }
    let object = |name: &str, text: Option<String>| -> Result<Option<serde_json::Value>, String> {
        let Some(text) = text else { return Ok(None) };
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v @ serde_json::Value::Object(_)) => Ok(Some(v)),
            Ok(_) => Err(format!("`{name}` must be a JSON object")),
            Err(e) => Err(format!("`{name}` is not JSON: {e}")),
        }
    };
    if let Some(v) = object("variables", params.variables)? {
        request = request.variables(async_graphql::Variables::from_json(v));
    }
    if let Some(serde_json::Value::Object(map)) = object("extensions", params.extensions)? {
        for (k, v) in map {
            let v = Value::from_json(v).map_err(|e| format!("`extensions.{k}`: {e}"))?;
            request.extensions.insert(k, v);
        }
    }
    Ok(request)
}

/// Resolves a persisted query (docs/graphql-connect.md "Persisted queries
/// over GET"), refuses a mutation sent by GET, and runs the request.
async fn execute(served: &Served, mut request: async_graphql::Request, get: bool) -> Response {
    if let Some(pq) = request.extensions.remove("persistedQuery") {
        let hash = match persisted_hash(pq) {
            Ok(hash) => hash,
            Err(message) => return gql_error(StatusCode::BAD_REQUEST, &message),
        };
        let mut store = served.store.lock().unwrap_or_else(|e| e.into_inner());
        if request.query.is_empty() {
            match store.get(&hash) {
                Some(document) => request.query = document.to_string(),
                None => return json(StatusCode::OK, persisted::not_found_body()),
            }
        } else if persisted::hash(&request.query) != hash {
            return gql_error(StatusCode::BAD_REQUEST, persisted::MISMATCH);
        } else {
            store.put(hash, &request.query);
        }
    } else if request.query.is_empty() {
        return gql_error(
            StatusCode::BAD_REQUEST,
            "no query: expected a `query` or `extensions.persistedQuery.sha256Hash`",
        );
    }
    if get && is_mutation(&mut request) {
        let mut response = gql_error(StatusCode::METHOD_NOT_ALLOWED, "a mutation is only accepted by POST");
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    let response = served.schema.execute(request).await;
    match serde_json::to_vec(&response) {
        Ok(body) => json(StatusCode::OK, body),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot write the response: {e}"),
        ),
    }
}

/// The hash of `extensions.persistedQuery`, checked: version 1 and 64 hex
/// digits.
fn persisted_hash(pq: Value) -> Result<String, String> {
    let pq = serde_json::to_value(pq).unwrap_or_default();
    if pq.get("version").and_then(serde_json::Value::as_i64) != Some(1) {
        return Err(format!(
            "extensions.persistedQuery.version must be 1, found {}",
            pq.get("version").map_or("nothing".into(), |v| v.to_string())
        ));
    }
    match pq.get("sha256Hash").and_then(serde_json::Value::as_str) {
        Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => Ok(h.to_ascii_lowercase()),
        other => Err(format!(
            "extensions.persistedQuery.sha256Hash must be 64 hex digits, found {}",
            other.unwrap_or("nothing")
        )),
    }
}

/// Whether the operation the request runs is a mutation (a document that
/// does not parse is left to the executor's error). The parse is kept in
/// the request, so the executor does not parse the document again.
fn is_mutation(request: &mut async_graphql::Request) -> bool {
    use async_graphql::parser::types::{DocumentOperations, OperationType};
    let name = request.operation_name.clone();
    let Ok(document) = request.parsed_query() else {
        return false;
    };
    let ty = match (&document.operations, name.as_deref()) {
        (DocumentOperations::Single(op), _) => Some(op.node.ty),
        (DocumentOperations::Multiple(ops), Some(name)) => ops.get(name).map(|op| op.node.ty),
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => ops.values().next().map(|op| op.node.ty),
        (DocumentOperations::Multiple(_), None) => None,
    };
    ty == Some(OperationType::Mutation)
}

fn json(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body,
    )
        .into_response()
}

/// A GraphQL error answer: `{"errors":[{"message"}]}` with `status`.
fn gql_error(status: StatusCode, message: &str) -> Response {
    json(status, persisted::error_body(message, None))
}

/// A call error as a GraphQL error: the message says what was wrong, and
/// `extensions.code` is `INVALID_ARGUMENT`, `NOT_FOUND` or
/// `INJECTED_FAILURE`.
fn graphql_error(err: CallError) -> async_graphql::Error {
    let (code, message) = match err {
        CallError::Invalid(m) => ("INVALID_ARGUMENT", m),
        CallError::NotFound(m) => ("NOT_FOUND", m),
        CallError::Injected => ("INJECTED_FAILURE", INJECTED_FAILURE.to_owned()),
    };
    async_graphql::Error::new(message).extend_with(|_, e| e.set("code", code))
}

fn core<'a>(ctx: &Context<'a>) -> &'a Arc<Core> {
    ctx.data_unchecked::<Arc<Core>>()
}

/// `Int64`: a 64-bit integer as a decimal string (a number is accepted on
/// input, as proto3's JSON form accepts one).
struct Int64(i64);

#[Scalar(name = "Int64")]
impl ScalarType for Int64 {
    fn parse(value: Value) -> InputValueResult<Self> {
        let parsed = match &value {
            Value::String(s) => s.parse::<i64>().ok(),
            Value::Number(n) => n.as_i64(),
            _ => None,
        };
        parsed
            .map(Int64)
            .ok_or_else(|| InputValueError::custom(format!("expected a 64-bit integer, found {value}")))
    }

    fn to_value(&self) -> Value {
        Value::String(self.0.to_string())
    }
}

/// `Bytes`: standard base64 with padding.
struct Bytes(String);

#[Scalar(name = "Bytes")]
impl ScalarType for Bytes {
    fn parse(value: Value) -> InputValueResult<Self> {
        match &value {
            Value::String(s) if base64::engine::general_purpose::STANDARD.decode(s).is_ok() => Ok(Bytes(s.clone())),
            _ => Err(InputValueError::custom(format!("expected base64 bytes, found {value}"))),
        }
    }

    fn to_value(&self) -> Value {
        Value::String(self.0.clone())
    }
}

/// `Empty`: the empty message, always `{}`.
struct EmptyScalar;

#[Scalar(name = "Empty")]
impl ScalarType for EmptyScalar {
    fn parse(value: Value) -> InputValueResult<Self> {
        match &value {
            Value::Object(m) if m.is_empty() => Ok(EmptyScalar),
            _ => Err(InputValueError::custom(format!("expected {{}}, found {value}"))),
        }
    }

    fn to_value(&self) -> Value {
        Value::Object(Default::default())
    }
}

#[derive(Enum, Copy, Clone, Eq, PartialEq)]
enum DeviceState {
    #[graphql(name = "DEVICE_STATE_UNSPECIFIED")]
    Unspecified,
    #[graphql(name = "DEVICE_STATE_ONLINE")]
    Online,
    #[graphql(name = "DEVICE_STATE_OFFLINE")]
    Offline,
    #[graphql(name = "DEVICE_STATE_MAINTENANCE")]
    Maintenance,
}

impl DeviceState {
    fn of(v: i32) -> Self {
        match bench::DeviceState::try_from(v) {
            Ok(bench::DeviceState::Online) => DeviceState::Online,
            Ok(bench::DeviceState::Offline) => DeviceState::Offline,
            Ok(bench::DeviceState::Maintenance) => DeviceState::Maintenance,
            _ => DeviceState::Unspecified,
        }
    }
}

#[derive(Enum, Copy, Clone, Eq, PartialEq)]
enum ItemCategory {
    #[graphql(name = "ITEM_CATEGORY_UNSPECIFIED")]
    Unspecified,
    #[graphql(name = "ITEM_CATEGORY_HARDWARE")]
    Hardware,
    #[graphql(name = "ITEM_CATEGORY_ELECTRONICS")]
    Electronics,
    #[graphql(name = "ITEM_CATEGORY_TOOLS")]
    Tools,
    #[graphql(name = "ITEM_CATEGORY_SUPPLIES")]
    Supplies,
}

impl ItemCategory {
    fn of(v: i32) -> Self {
        match bench::ItemCategory::try_from(v) {
            Ok(bench::ItemCategory::Hardware) => ItemCategory::Hardware,
            Ok(bench::ItemCategory::Electronics) => ItemCategory::Electronics,
            Ok(bench::ItemCategory::Tools) => ItemCategory::Tools,
            Ok(bench::ItemCategory::Supplies) => ItemCategory::Supplies,
            _ => ItemCategory::Unspecified,
        }
    }
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Default)]
enum Color {
    #[default]
    Black,
    White,
    Blue,
    Red,
    Yellow,
    Green,
}

impl Color {
    fn of(v: i32) -> Self {
        use helloworld::hello::pet::Color as C;
        match C::try_from(v) {
            Ok(C::White) => Color::White,
            Ok(C::Blue) => Color::Blue,
            Ok(C::Red) => Color::Red,
            Ok(C::Yellow) => Color::Yellow,
            Ok(C::Green) => Color::Green,
            _ => Color::Black,
        }
    }

    fn proto(self) -> i32 {
        use helloworld::hello::pet::Color as C;
        (match self {
            Color::Black => C::Black,
            Color::White => C::White,
            Color::Blue => C::Blue,
            Color::Red => C::Red,
            Color::Yellow => C::Yellow,
            Color::Green => C::Green,
        }) as i32
    }
}

/// `InventoryStatus`, from the dataset.
struct InventoryStatus(Arc<Dataset>);

#[Object]
impl InventoryStatus {
    async fn service_name(&self) -> &str {
        &self.0.inventory_status.service_name
    }
    async fn region_code(&self) -> &str {
        &self.0.inventory_status.region_code
    }
    async fn status_message(&self) -> &str {
        &self.0.inventory_status.status_message
    }
    async fn recent_errors(&self) -> &[String] {
        &self.0.inventory_status.recent_errors
    }
    async fn cpu_utilization(&self) -> f64 {
        self.0.inventory_status.cpu_utilization
    }
    async fn memory_utilization(&self) -> f64 {
        self.0.inventory_status.memory_utilization
    }
    async fn average_response_millis(&self) -> f64 {
        self.0.inventory_status.average_response_millis
    }
    async fn active_device_count(&self) -> i32 {
        self.0.inventory_status.active_device_count
    }
}

/// One element of a dataset list, by index.
struct Row(Arc<Dataset>, usize);

/// `Device`.
struct Device(Row);

#[Object]
impl Device {
    async fn device_id(&self) -> &str {
        &self.0.0.devices[self.0.1].device_id
    }
    async fn state(&self) -> DeviceState {
        DeviceState::of(self.0.0.devices[self.0.1].state)
    }
    async fn reading_count(&self) -> i32 {
        self.0.0.devices[self.0.1].reading_count
    }
}

/// `DeviceList`.
struct DeviceList(Arc<Dataset>);

#[Object]
impl DeviceList {
    async fn devices(&self) -> Vec<Device> {
        (0..self.0.devices.len())
            .map(|i| Device(Row(self.0.clone(), i)))
            .collect()
    }
}

/// `Location` of an item.
struct Location(Row);

#[Object]
impl Location {
    async fn warehouse(&self) -> &str {
        self.get().map_or("", |l| l.warehouse.as_str())
    }
    async fn aisle(&self) -> i32 {
        self.get().map_or(0, |l| l.aisle)
    }
    async fn shelf(&self) -> i32 {
        self.get().map_or(0, |l| l.shelf)
    }
    async fn bin(&self) -> &str {
        self.get().map_or("", |l| l.bin.as_str())
    }
}

impl Location {
    fn get(&self) -> Option<&bench::Location> {
        self.0.0.items[self.0.1].location.as_ref()
    }
}

/// `Item`.
struct Item(Row);

impl Item {
    fn get(&self) -> &bench::Item {
        &self.0.0.items[self.0.1]
    }
}

#[Object]
impl Item {
    async fn id(&self) -> &str {
        &self.get().id
    }
    async fn name(&self) -> &str {
        &self.get().name
    }
    async fn category(&self) -> ItemCategory {
        ItemCategory::of(self.get().category)
    }
    async fn unit_price(&self) -> f64 {
        self.get().unit_price
    }
    async fn weight_kg(&self) -> f64 {
        f64::from(self.get().weight_kg)
    }
    async fn quantity(&self) -> i32 {
        self.get().quantity
    }
    async fn in_stock(&self) -> bool {
        self.get().in_stock
    }
    async fn fragile(&self) -> bool {
        self.get().fragile
    }
    async fn location(&self) -> Option<Location> {
        self.get()
            .location
            .as_ref()
            .map(|_| Location(Row(self.0.0.clone(), self.0.1)))
    }
    async fn description(&self) -> Option<&str> {
        self.get().description.as_deref()
    }
    async fn supplier(&self) -> Option<&str> {
        self.get().supplier.as_deref()
    }
}

/// `ItemList`.
struct ItemList(Arc<Dataset>);

#[Object]
impl ItemList {
    async fn items(&self) -> Vec<Item> {
        (0..self.0.items.len()).map(|i| Item(Row(self.0.clone(), i))).collect()
    }
}

/// `Person`.
struct Person(Row);

impl Person {
    fn get(&self) -> &bench::Person {
        &self.0.0.people[self.0.1]
    }
}

#[Object]
impl Person {
    async fn id(&self) -> i32 {
        self.get().id
    }
    async fn first_name(&self) -> &str {
        &self.get().first_name
    }
    async fn last_name(&self) -> &str {
        &self.get().last_name
    }
    async fn email(&self) -> &str {
        &self.get().email
    }
    async fn age(&self) -> i32 {
        self.get().age
    }
    async fn active(&self) -> bool {
        self.get().active
    }
    async fn balance(&self) -> f64 {
        self.get().balance
    }
}

/// `ObjectList`.
struct ObjectList(Arc<Dataset>);

#[Object]
impl ObjectList {
    async fn people(&self) -> Vec<Person> {
        (0..self.0.people.len())
            .map(|i| Person(Row(self.0.clone(), i)))
            .collect()
    }
}

/// `FileContent`.
struct FileContent {
    dataset: Arc<Dataset>,
    name: String,
    index: usize,
}

#[Object]
impl FileContent {
    async fn name(&self) -> &str {
        &self.name
    }
    async fn content(&self) -> Bytes {
        Bytes(base64::engine::general_purpose::STANDARD.encode(&self.dataset.files[self.index].1))
    }
}

/// `IntegerValue`.
struct IntegerValue(bench::IntegerValue);

#[Object]
impl IntegerValue {
    async fn value(&self) -> i32 {
        self.0.value
    }
}

/// `IntegerList`.
struct IntegerList(bench::IntegerList);

#[Object]
impl IntegerList {
    async fn values(&self) -> &[i32] {
        &self.0.values
    }
}

/// `Product` (echoed).
struct Product(bench::Product);

#[Object]
impl Product {
    async fn id(&self) -> i32 {
        self.0.id
    }
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn description(&self) -> &str {
        &self.0.description
    }
    async fn price(&self) -> f64 {
        self.0.price
    }
    async fn stock(&self) -> i32 {
        self.0.stock
    }
    async fn tags(&self) -> &[String] {
        &self.0.tags
    }
}

/// `CloneResponse`.
struct CloneResponse(bench::CloneResponse);

#[Object]
impl CloneResponse {
    async fn texts(&self) -> &[String] {
        &self.0.texts
    }
}

/// `EchoMessage`.
struct EchoMessage(bench::EchoMessage);

#[Object]
impl EchoMessage {
    async fn payload(&self) -> &str {
        &self.0.payload
    }
}

/// `Pet`.
struct Pet(helloworld::hello::Pet);

#[Object]
impl Pet {
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn color(&self) -> Color {
        Color::of(self.0.color)
    }
}

/// `Hello`: grpc_bench's complex message.
struct Hello(helloworld::Hello);

#[Object]
impl Hello {
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn d(&self) -> f64 {
        self.0.d
    }
    async fn f(&self) -> f64 {
        f64::from(self.0.f)
    }
    async fn b(&self) -> bool {
        self.0.b
    }
    async fn n(&self) -> i32 {
        self.0.n
    }
    async fn l(&self) -> Int64 {
        Int64(self.0.l)
    }
    async fn c1(&self) -> Option<&str> {
        match &self.0.choice {
            Some(helloworld::hello::Choice::C1(s)) => Some(s),
            _ => None,
        }
    }
    async fn c2(&self) -> Option<bool> {
        match &self.0.choice {
            Some(helloworld::hello::Choice::C2(b)) => Some(*b),
            _ => None,
        }
    }
    async fn pets(&self) -> Vec<Pet> {
        self.0.pets.iter().cloned().map(Pet).collect()
    }
}

/// `HelloReply`.
struct HelloReply(helloworld::HelloReply);

#[Object]
impl HelloReply {
    async fn response(&self) -> Option<Hello> {
        self.0.response.clone().map(Hello)
    }
}

/// `ProductInput`: a member left out takes proto3's default.
#[derive(InputObject)]
struct ProductInput {
    #[graphql(default)]
    id: i32,
    #[graphql(default)]
    name: String,
    #[graphql(default)]
    description: String,
    #[graphql(default)]
    price: f64,
    #[graphql(default)]
    stock: i32,
    #[graphql(default)]
    tags: Vec<String>,
}

impl From<ProductInput> for bench::Product {
    fn from(p: ProductInput) -> Self {
        bench::Product {
            id: p.id,
            name: p.name,
            description: p.description,
            price: p.price,
            stock: p.stock,
            tags: p.tags,
        }
    }
}

/// `CloneRequestInput`.
#[derive(InputObject)]
struct CloneRequestInput {
    #[graphql(default)]
    text: String,
    #[graphql(default)]
    times: i32,
}

/// `EchoMessageInput`.
#[derive(InputObject)]
struct EchoMessageInput {
    #[graphql(default)]
    payload: String,
}

/// `PetInput`.
#[derive(InputObject)]
struct PetInput {
    #[graphql(default)]
    name: String,
    #[graphql(default)]
    color: Color,
}

/// `HelloInput`: at most one of `c1`, `c2`.
#[derive(InputObject)]
struct HelloInput {
    #[graphql(default)]
    name: String,
    #[graphql(default)]
    d: f64,
    #[graphql(default)]
    f: f64,
    #[graphql(default)]
    b: bool,
    #[graphql(default)]
    n: i32,
    #[graphql(default_with = "Int64(0)")]
    l: Int64,
    c1: Option<String>,
    c2: Option<bool>,
    #[graphql(default)]
    pets: Vec<PetInput>,
}

/// `HelloRequestInput`.
#[derive(InputObject)]
struct HelloRequestInput {
    request: Option<HelloInput>,
}

impl HelloInput {
    fn into_proto(self) -> Result<helloworld::Hello, CallError> {
        let f = self.f as f32;
        if !f.is_finite() {
            return Err(CallError::Invalid(format!(
                "request.f is {}, not a finite number in float's range",
                self.f
            )));
        }
        let choice = match (self.c1, self.c2) {
            (Some(_), Some(_)) => {
                return Err(CallError::Invalid(
                    "request.c1 and request.c2 are both set; the oneof choice takes at most one".into(),
                ));
            }
            (Some(s), None) => Some(helloworld::hello::Choice::C1(s)),
            (None, Some(b)) => Some(helloworld::hello::Choice::C2(b)),
            (None, None) => None,
        };
        Ok(helloworld::Hello {
            name: self.name,
            d: self.d,
            f,
            b: self.b,
            n: self.n,
            l: self.l.0,
            choice,
            pets: self
                .pets
                .into_iter()
                .map(|p| helloworld::hello::Pet {
                    name: p.name,
                    color: p.color.proto(),
                })
                .collect(),
        })
    }
}

/// The queries: the REST `GET` operations.
pub(crate) struct Query;

#[Object]
impl Query {
    async fn inventory_xs(&self, ctx: &Context<'_>) -> async_graphql::Result<EmptyScalar> {
        core(ctx)
            .get_inventory_xs(bench::Empty {})
            .await
            .map_err(graphql_error)?;
        Ok(EmptyScalar)
    }
    async fn inventory_s(&self, ctx: &Context<'_>) -> async_graphql::Result<InventoryStatus> {
        let view = core(ctx)
            .get_inventory_s(bench::Empty {})
            .await
            .map_err(graphql_error)?;
        Ok(InventoryStatus(view.0))
    }
    async fn inventory_m(&self, ctx: &Context<'_>) -> async_graphql::Result<DeviceList> {
        let view = core(ctx)
            .get_inventory_m(bench::Empty {})
            .await
            .map_err(graphql_error)?;
        Ok(DeviceList(view.0))
    }
    async fn inventory_l(&self, ctx: &Context<'_>) -> async_graphql::Result<ItemList> {
        let view = core(ctx)
            .get_inventory_l(bench::Empty {})
            .await
            .map_err(graphql_error)?;
        Ok(ItemList(view.0))
    }
    async fn integer(&self, ctx: &Context<'_>) -> async_graphql::Result<IntegerValue> {
        let v = core(ctx).get_integer(bench::Empty {}).await.map_err(graphql_error)?;
        Ok(IntegerValue(v))
    }
    async fn integers(&self, ctx: &Context<'_>) -> async_graphql::Result<IntegerList> {
        let v = core(ctx).get_integers(bench::Empty {}).await.map_err(graphql_error)?;
        Ok(IntegerList(v))
    }
    async fn objects(&self, ctx: &Context<'_>) -> async_graphql::Result<ObjectList> {
        let view = core(ctx).get_objects(bench::Empty {}).await.map_err(graphql_error)?;
        Ok(ObjectList(view.0))
    }
    async fn file(&self, ctx: &Context<'_>, name: String) -> async_graphql::Result<FileContent> {
        let view = core(ctx)
            .get_file(bench::FileRequest { name })
            .await
            .map_err(graphql_error)?;
        Ok(FileContent {
            dataset: view.dataset,
            name: view.name,
            index: view.index,
        })
    }
}

/// The mutations: the REST `POST` operations.
pub(crate) struct Mutation;

#[Object]
impl Mutation {
    async fn echo_product(&self, ctx: &Context<'_>, input: ProductInput) -> async_graphql::Result<Product> {
        let p = core(ctx).echo_product(input.into()).await.map_err(graphql_error)?;
        Ok(Product(p))
    }
    async fn modify_product(&self, ctx: &Context<'_>, input: ProductInput) -> async_graphql::Result<Product> {
        let p = core(ctx).modify_product(input.into()).await.map_err(graphql_error)?;
        Ok(Product(p))
    }
    async fn clone_text(&self, ctx: &Context<'_>, input: CloneRequestInput) -> async_graphql::Result<CloneResponse> {
        let request = bench::CloneRequest {
            text: input.text,
            times: input.times,
        };
        let r = core(ctx).clone_text(request).await.map_err(graphql_error)?;
        Ok(CloneResponse(r))
    }
    async fn echo(&self, ctx: &Context<'_>, input: EchoMessageInput) -> async_graphql::Result<EchoMessage> {
        let m = core(ctx)
            .echo(bench::EchoMessage { payload: input.payload })
            .await
            .map_err(graphql_error)?;
        Ok(EchoMessage(m))
    }
    async fn say_hello(&self, ctx: &Context<'_>, input: HelloRequestInput) -> async_graphql::Result<HelloReply> {
        let request = match input.request {
            Some(h) => Some(h.into_proto().map_err(graphql_error)?),
            None => None,
        };
        let r = core(ctx)
            .say_hello(helloworld::HelloRequest { request })
            .await
            .map_err(graphql_error)?;
        Ok(HelloReply(r))
    }
}

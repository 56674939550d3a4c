//! What every protocol shares once a request is decoded: validation, the
//! injected service time, the failure draw and the operations themselves.
//!
//! The order is the contract's: decode (in the protocol module), validate,
//! service time, failure draw, respond. Responses that come from the dataset
//! are [views](crate::views) of it; echoes move the request into the response.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use protobench_contract::data::{self, splitmix64};
use protobench_contract::pb::{bench, helloworld};
use protobench_contract::semantics;
use protobench_contract::{ContractError, Dataset, Message, Operation};

use crate::config::{ServerConfig, ServiceTime};
use crate::views::{DeviceListView, FileContentView, InventoryStatusView, ItemListView, ObjectListView};

/// Why a decoded call gets no normal response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallError {
    /// A value the operation does not accept (400, INVALID_ARGUMENT, Client fault).
    Invalid(String),
    /// An unknown file (404, NOT_FOUND, Client fault).
    NotFound(String),
    /// The failure draw picked this call (500, UNAVAILABLE, Server fault).
    Injected,
}

/// The message of an injected failure in every protocol.
pub(crate) use protobench_contract::INJECTED_FAILURE;

impl From<ContractError> for CallError {
    fn from(err: ContractError) -> Self {
        match err {
            ContractError::InvalidArgument(m) => CallError::Invalid(m),
            ContractError::NotFound(m) => CallError::NotFound(m),
        }
    }
}

/// The failure draw: one process-wide counter `k`; call `k` fails when
/// `splitmix64(seed + k) / 2^64 < rate`.
#[derive(Debug)]
pub(crate) struct FailureDraw {
    seed: u64,
    /// `ceil(rate * 2^64)`: for an integer `z`, `z / 2^64 < rate` exactly
    /// when `z < ceil(rate * 2^64)` (the product is exact in `f64`).
    threshold: u128,
    k: AtomicU64,
}

impl FailureDraw {
    pub(crate) fn new(rate: f64, seed: u64) -> Self {
        let threshold = (rate.clamp(0.0, 1.0) * 18_446_744_073_709_551_616.0).ceil() as u128;
        FailureDraw {
            seed,
            threshold,
            k: AtomicU64::new(0),
        }
    }

    /// Takes the next `k` and says whether that call fails.
    pub(crate) fn draw(&self) -> bool {
        let k = self.k.fetch_add(1, Ordering::Relaxed);
        self.threshold > 0 && u128::from(splitmix64(self.seed.wrapping_add(k))) < self.threshold
    }

    /// Draws so far.
    pub(crate) fn count(&self) -> u64 {
        self.k.load(Ordering::Relaxed)
    }
}

/// The state every listener shares.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) dataset: Arc<Dataset>,
    pub(crate) max_request_bytes: usize,
    /// How long an HTTP/1.1 request body may take to arrive.
    pub(crate) read_timeout: std::time::Duration,
    /// How long a WebSocket may go without a client message while the
    /// server waits for one (`PROTOBENCH_IDLE_TIMEOUT`).
    pub(crate) idle_timeout: std::time::Duration,
    /// The feeds' test fault ([`crate::FeedFault`]), none by default.
    pub(crate) feed_fault: Option<crate::FeedFault>,
    service_time: Option<ServiceTime>,
    /// When the first call arrived: a ramped service time counts from
    /// here, as a JIT warms up with the calls it sees, not with the time
    /// since start-up (which a slow start or verification would eat).
    first_call: std::sync::OnceLock<std::time::Instant>,
    failures: FailureDraw,
    in_flight: AtomicU64,
}

/// Counts a call as in flight until dropped.
pub(crate) struct InFlight<'a>(&'a AtomicU64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response, owned or a view of the dataset.
pub(crate) enum Reply {
    Owned(Message),
    InventoryStatus(InventoryStatusView),
    DeviceList(DeviceListView),
    ItemList(ItemListView),
    ObjectList(ObjectListView),
    FileContent(FileContentView),
}

impl Reply {
    /// Canonical JSON bytes.
    pub(crate) fn to_json(&self) -> Vec<u8> {
        let json = match self {
            Reply::Owned(m) => return m.to_json(),
            Reply::InventoryStatus(v) => serde_json::to_vec(v),
            Reply::DeviceList(v) => serde_json::to_vec(v),
            Reply::ItemList(v) => serde_json::to_vec(v),
            Reply::ObjectList(v) => serde_json::to_vec(v),
            Reply::FileContent(v) => serde_json::to_vec(v),
        };
        json.expect("contract messages always serialize")
    }

    /// Protobuf bytes.
    pub(crate) fn to_protobuf(&self) -> Vec<u8> {
        use prost::Message as _;
        match self {
            Reply::Owned(m) => m.to_protobuf(),
            Reply::InventoryStatus(v) => v.encode_to_vec(),
            Reply::DeviceList(v) => v.encode_to_vec(),
            Reply::ItemList(v) => v.encode_to_vec(),
            Reply::ObjectList(v) => v.encode_to_vec(),
            Reply::FileContent(v) => v.encode_to_vec(),
        }
    }

    /// Writes the XML element `element` holding the message's fields.
    pub(crate) fn write_xml(&self, out: &mut String, element: &str) {
        use protobench_contract::xml::write_element;
        match self {
            Reply::Owned(m) => m.write_xml_element(out, element),
            Reply::InventoryStatus(v) => write_element(out, element, v),
            Reply::DeviceList(v) => write_element(out, element, v),
            Reply::ItemList(v) => write_element(out, element, v),
            Reply::ObjectList(v) => write_element(out, element, v),
            Reply::FileContent(v) => write_element(out, element, v),
        }
    }
}

impl Core {
    pub(crate) fn new(config: &ServerConfig, dataset: Arc<Dataset>) -> Self {
        Core {
            dataset,
            max_request_bytes: config.max_request_bytes,
            read_timeout: config.read_timeout,
            idle_timeout: config.idle_timeout,
            feed_fault: config.feed_fault,
            service_time: config.service_time,
            first_call: std::sync::OnceLock::new(),
            failures: FailureDraw::new(config.failure_rate, config.failure_seed),
            in_flight: AtomicU64::new(0),
        }
    }

    /// Marks a call in flight for as long as the guard lives.
    pub(crate) fn enter(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(&self.in_flight)
    }

    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    pub(crate) fn requests_served(&self) -> u64 {
        self.failures.count()
    }

    /// The part every valid call goes through before its response is built:
    /// the injected service time, then the failure draw.
    pub(crate) async fn admit(&self) -> Result<(), CallError> {
        if let Some(st) = self.service_time {
            let since = self.first_call.get_or_init(Instant::now).elapsed();
            match st.at(since) {
                (d, false) => tokio::time::sleep(d).await,
                (d, true) => {
                    let start = Instant::now();
                    while start.elapsed() < d {
                        std::hint::spin_loop();
                    }
                }
            }
        }
        if self.failures.draw() {
            Err(CallError::Injected)
        } else {
            Ok(())
        }
    }

    pub(crate) async fn get_inventory_xs(&self, _: bench::Empty) -> Result<bench::Empty, CallError> {
        self.admit().await?;
        Ok(bench::Empty {})
    }

    pub(crate) async fn get_inventory_s(&self, _: bench::Empty) -> Result<InventoryStatusView, CallError> {
        self.admit().await?;
        Ok(InventoryStatusView(self.dataset.clone()))
    }

    pub(crate) async fn get_inventory_m(&self, _: bench::Empty) -> Result<DeviceListView, CallError> {
        self.admit().await?;
        Ok(DeviceListView(self.dataset.clone()))
    }

    pub(crate) async fn get_inventory_l(&self, _: bench::Empty) -> Result<ItemListView, CallError> {
        self.admit().await?;
        Ok(ItemListView(self.dataset.clone()))
    }

    pub(crate) async fn echo_product(&self, product: bench::Product) -> Result<bench::Product, CallError> {
        self.admit().await?;
        Ok(product)
    }

    pub(crate) async fn modify_product(&self, mut product: bench::Product) -> Result<bench::Product, CallError> {
        self.admit().await?;
        product.description = semantics::reverse_scalars(&product.description);
        Ok(product)
    }

    pub(crate) async fn clone_text(&self, request: bench::CloneRequest) -> Result<bench::CloneResponse, CallError> {
        validate_clone(&request)?;
        self.admit().await?;
        Ok(semantics::clone_text(&request)?)
    }

    pub(crate) async fn get_integer(&self, _: bench::Empty) -> Result<bench::IntegerValue, CallError> {
        self.admit().await?;
        Ok(bench::IntegerValue {
            value: data::INTEGER_VALUE,
        })
    }

    pub(crate) async fn get_integers(&self, _: bench::Empty) -> Result<bench::IntegerList, CallError> {
        self.admit().await?;
        Ok(bench::IntegerList {
            values: (0..data::INTEGER_COUNT).collect(),
        })
    }

    pub(crate) async fn get_objects(&self, _: bench::Empty) -> Result<ObjectListView, CallError> {
        self.admit().await?;
        Ok(ObjectListView(self.dataset.clone()))
    }

    pub(crate) async fn get_file(&self, request: bench::FileRequest) -> Result<FileContentView, CallError> {
        let Some(index) = self.dataset.files.iter().position(|(name, _)| *name == request.name) else {
            return Err(CallError::NotFound(format!(
                "no file named {:?}; known files: {}",
                request.name,
                data::FILES.map(|(n, _)| n).join(", ")
            )));
        };
        self.admit().await?;
        Ok(FileContentView {
            name: request.name,
            dataset: self.dataset.clone(),
            index,
        })
    }

    pub(crate) async fn echo(&self, message: bench::EchoMessage) -> Result<bench::EchoMessage, CallError> {
        self.admit().await?;
        Ok(message)
    }

    pub(crate) async fn say_hello(
        &self,
        request: helloworld::HelloRequest,
    ) -> Result<helloworld::HelloReply, CallError> {
        self.admit().await?;
        Ok(helloworld::HelloReply {
            response: request.request,
        })
    }

    /// Any operation, for the protocols that dispatch at run time (REST, SOAP).
    pub(crate) async fn respond(&self, op: Operation, request: Message) -> Result<Reply, CallError> {
        use {Message as M, Operation as O};
        Ok(match (op, request) {
            (O::GetInventoryXs, M::Empty(r)) => Reply::Owned(M::Empty(self.get_inventory_xs(r).await?)),
            (O::GetInventoryS, M::Empty(r)) => Reply::InventoryStatus(self.get_inventory_s(r).await?),
            (O::GetInventoryM, M::Empty(r)) => Reply::DeviceList(self.get_inventory_m(r).await?),
            (O::GetInventoryL, M::Empty(r)) => Reply::ItemList(self.get_inventory_l(r).await?),
            (O::EchoProduct, M::Product(r)) => Reply::Owned(M::Product(self.echo_product(r).await?)),
            (O::ModifyProduct, M::Product(r)) => Reply::Owned(M::Product(self.modify_product(r).await?)),
            (O::CloneText, M::CloneRequest(r)) => Reply::Owned(M::CloneResponse(self.clone_text(r).await?)),
            (O::GetInteger, M::Empty(r)) => Reply::Owned(M::IntegerValue(self.get_integer(r).await?)),
            (O::GetIntegers, M::Empty(r)) => Reply::Owned(M::IntegerList(self.get_integers(r).await?)),
            (O::GetObjects, M::Empty(r)) => Reply::ObjectList(self.get_objects(r).await?),
            (O::GetFile, M::FileRequest(r)) => Reply::FileContent(self.get_file(r).await?),
            (O::Echo, M::EchoMessage(r)) => Reply::Owned(M::EchoMessage(self.echo(r).await?)),
            (O::SayHello, M::HelloRequest(r)) => Reply::Owned(M::HelloReply(self.say_hello(r).await?)),
            (op, other) => {
                return Err(CallError::Invalid(format!(
                    "{op} takes {:?}, got {:?}",
                    op.request_kind(),
                    other.kind()
                )));
            }
        })
    }
}

/// The checks of `semantics::clone_text`, done before the service time and
/// the failure draw as the contract orders them.
fn validate_clone(request: &bench::CloneRequest) -> Result<(), CallError> {
    Ok(semantics::validate_clone(request)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draw_matches_the_contract_formula_exactly() {
        for (rate, seed) in [(0.2, 42), (0.5, 1), (0.001, 7), (0.999, u64::MAX)] {
            let draw = FailureDraw::new(rate, seed);
            for k in 0..5000u64 {
                let expected = (splitmix64(seed.wrapping_add(k)) as f64) / 18_446_744_073_709_551_616.0 < rate;
                assert_eq!(draw.draw(), expected, "rate {rate} seed {seed} k {k}");
            }
            assert_eq!(draw.count(), 5000);
        }
    }

    #[test]
    fn rates_zero_and_one_never_and_always_fail() {
        let never = FailureDraw::new(0.0, 3);
        let always = FailureDraw::new(1.0, 3);
        assert!((0..1000).all(|_| !never.draw() && always.draw()));
    }

    #[test]
    fn clone_validation_agrees_with_the_reference_semantics() {
        let cases = [
            ("x", -1),
            ("x", 0),
            ("x", 100_000),
            ("x", 100_001),
            ("0123456789", 100_000),
        ];
        for (text, times) in cases {
            let r = bench::CloneRequest {
                text: text.repeat(70),
                times,
            };
            assert_eq!(
                validate_clone(&r).err(),
                semantics::clone_text(&r).err().map(CallError::from),
                "{times}"
            );
        }
    }
}

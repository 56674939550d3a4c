//! Responses encoded straight from the shared dataset.
//!
//! `GetInventoryS/M/L`, `GetObjects` and `GetFile` return data the server
//! loaded once at start-up. Building the contract's owned message for them
//! (what [`Operation::respond`](protobench_contract::Operation::respond)
//! does) copies the whole dataset part on every call: 1,395 items with
//! about 8,000 strings for `inventory.l`, 3.4 MB for `tasks.file-3m4`. A view
//! holds an `Arc` of the dataset instead and encodes the same fields in the
//! same order: protobuf through a `prost::Message` impl (used by the
//! generated tonic code through `extern_path`, see `build.rs`), JSON and XML
//! through a `serde::Serialize` impl that mirrors the pbjson-generated one
//! (the contract's XML writer is driven by serde too). Every call still
//! encodes every byte; only the copy of the source objects is avoided.
//! Tests check each view's bytes against the owned message's encodings.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{self, DecodeContext, WireType};
use protobench_contract::Dataset;
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// Implements `prost::Message` (encode only) and `Debug` for a view.
macro_rules! encode_only_message {
    ($view:ident) => {
        impl prost::Message for $view {
            fn encode_raw(&self, buf: &mut impl BufMut) {
                self.encode_fields(buf)
            }

            fn merge_field(
                &mut self,
                tag: u32,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), prost::DecodeError> {
                // Views are responses only; a decoder would use the contract type.
                encoding::skip_field(wire_type, tag, buf, ctx)
            }

            fn encoded_len(&self) -> usize {
                self.fields_len()
            }

            fn clear(&mut self) {}
        }

        impl fmt::Debug for $view {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(concat!(stringify!($view), " (view of the shared dataset)"))
            }
        }
    };
}

/// `InventoryStatus`: the dataset's `inventoryStatus`.
#[derive(Clone)]
pub struct InventoryStatusView(pub(crate) Arc<Dataset>);

impl InventoryStatusView {
    /// A view of `dataset`'s `inventoryStatus`.
    pub fn new(dataset: Arc<Dataset>) -> Self {
        InventoryStatusView(dataset)
    }

    fn encode_fields(&self, buf: &mut impl BufMut) {
        prost::Message::encode_raw(&self.0.inventory_status, buf)
    }

    fn fields_len(&self) -> usize {
        prost::Message::encoded_len(&self.0.inventory_status)
    }
}

impl Serialize for InventoryStatusView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.inventory_status.serialize(serializer)
    }
}

encode_only_message!(InventoryStatusView);

/// Defines a view of one repeated message field of the dataset.
macro_rules! list_view {
    ($(#[$doc:meta])* $view:ident, $message:literal, $field:ident, $json:literal) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $view(pub(crate) Arc<Dataset>);

        impl $view {
            #[doc = concat!("A view of `dataset`'s `", stringify!($field), "`.")]
            pub fn new(dataset: Arc<Dataset>) -> Self {
                $view(dataset)
            }

            fn encode_fields(&self, buf: &mut impl BufMut) {
                for value in &self.0.$field {
                    encoding::message::encode(1, value, buf);
                }
            }

            fn fields_len(&self) -> usize {
                encoding::message::encoded_len_repeated(1, &self.0.$field)
            }
        }

        impl Serialize for $view {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut s = serializer.serialize_struct($message, 1)?;
                s.serialize_field($json, &self.0.$field)?;
                s.end()
            }
        }

        encode_only_message!($view);
    };
}

list_view!(
    /// `DeviceList`: the dataset's 480 `devices`.
    DeviceListView, "protobench.v1.DeviceList", devices, "devices"
);
list_view!(
    /// `ItemList`: the dataset's 1,395 `items`.
    ItemListView, "protobench.v1.ItemList", items, "items"
);
list_view!(
    /// `ObjectList`: the dataset's 16 `people`.
    ObjectListView, "protobench.v1.ObjectList", people, "people"
);

/// `FileContent`: the requested name and the bytes of one of the dataset's
/// files.
#[derive(Clone)]
pub struct FileContentView {
    pub(crate) name: String,
    pub(crate) dataset: Arc<Dataset>,
    pub(crate) index: usize,
}

impl FileContentView {
    /// A view of the file called `name`, if the dataset has one.
    pub fn new(dataset: Arc<Dataset>, name: &str) -> Option<Self> {
        let index = dataset.files.iter().position(|(n, _)| n == name)?;
        Some(FileContentView {
            name: name.to_owned(),
            dataset,
            index,
        })
    }

    fn content(&self) -> &Vec<u8> {
        &self.dataset.files[self.index].1
    }

    fn encode_fields(&self, buf: &mut impl BufMut) {
        if !self.name.is_empty() {
            encoding::string::encode(1, &self.name, buf);
        }
        if !self.content().is_empty() {
            encoding::bytes::encode(2, self.content(), buf);
        }
    }

    fn fields_len(&self) -> usize {
        let mut len = 0;
        if !self.name.is_empty() {
            len += encoding::string::encoded_len(1, &self.name);
        }
        if !self.content().is_empty() {
            len += encoding::bytes::encoded_len(2, self.content());
        }
        len
    }
}

impl Serialize for FileContentView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("protobench.v1.FileContent", 2)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field(
            "content",
            &base64::engine::general_purpose::STANDARD.encode(self.content()),
        )?;
        s.end()
    }
}

encode_only_message!(FileContentView);

//! Every contract message behind one enum, with the three canonical encodings.

use prost::Message as _;

use crate::pb::{bench, helloworld};

/// A wire encoding of the contract's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Protobuf, as carried by gRPC (without the gRPC frame).
    Protobuf,
    /// The canonical JSON form (proto3 JSON mapping, unpopulated fields emitted).
    Json,
    /// The SOAP 1.1 envelope around the operation's body element.
    Xml,
    /// GraphQL over HTTP: the request as `{"query","operationName","variables"}`
    /// selecting every field, the response as `{"data":{"<root field>":...}}`
    /// ([`crate::graphql`]).
    Graphql,
}

impl Encoding {
    /// Every encoding.
    pub const ALL: [Encoding; 4] = [Encoding::Json, Encoding::Protobuf, Encoding::Xml, Encoding::Graphql];

    /// The vector file extension: `pb`, `json`, `xml`, `graphql.json`.
    pub fn extension(self) -> &'static str {
        match self {
            Encoding::Protobuf => "pb",
            Encoding::Json => "json",
            Encoding::Xml => "xml",
            Encoding::Graphql => "graphql.json",
        }
    }
}

/// Why a body could not be decoded into the expected message.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not valid protobuf for the message.
    #[error("invalid protobuf: {0}")]
    Protobuf(#[from] prost::DecodeError),
    /// Not valid JSON, or not the message's JSON form.
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// Not a valid SOAP envelope, or not the message's XML form.
    #[error("invalid XML: {0}")]
    Xml(#[from] crate::xml::XmlError),
    /// A JSON number the field's type cannot hold (a `float` beyond its range).
    #[error("invalid JSON: {0}")]
    OutOfRange(String),
    /// Not the GraphQL request or response form (or a response with errors).
    #[error("invalid GraphQL response: {0}")]
    Graphql(String),
    /// A SOAP body element other than the expected one.
    #[error("unexpected SOAP body element {found}, expected {expected}")]
    WrongElement {
        /// What the body held.
        found: String,
        /// What the operation needs.
        expected: String,
    },
}

macro_rules! messages {
    ($( $kind:ident => $ty:ty; )*) => {
        /// The type of a contract message.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum MessageKind {
            $(
                #[doc = concat!("`", stringify!($ty), "`")]
                $kind,
            )*
        }

        /// A contract message of any type.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Message {
            $(
                #[doc = concat!("`", stringify!($ty), "`")]
                $kind($ty),
            )*
        }

        impl Message {
            /// The message's type.
            pub fn kind(&self) -> MessageKind {
                match self { $(Message::$kind(_) => MessageKind::$kind,)* }
            }

            /// Protobuf bytes.
            pub fn to_protobuf(&self) -> Vec<u8> {
                match self { $(Message::$kind(m) => m.encode_to_vec(),)* }
            }

            /// Canonical JSON bytes.
            pub fn to_json(&self) -> Vec<u8> {
                let r = match self { $(Message::$kind(m) => serde_json::to_vec(m),)* };
                r.expect("contract messages always serialize")
            }

            /// Writes the XML fields of this message inside an element named
            /// `element` in the contract namespace.
            pub fn write_xml_element(&self, out: &mut String, element: &str) {
                match self { $(Message::$kind(m) => crate::xml::write_element(out, element, m),)* }
            }

            /// Decodes protobuf bytes as a message of `kind`.
            pub fn from_protobuf(kind: MessageKind, bytes: &[u8]) -> Result<Message, DecodeError> {
                Ok(match kind { $(MessageKind::$kind => Message::$kind(<$ty>::decode(bytes)?),)* })
            }

            /// Decodes canonical JSON as a message of `kind` (unknown members are errors).
            pub fn from_json(kind: MessageKind, bytes: &[u8]) -> Result<Message, DecodeError> {
                Ok(match kind { $(MessageKind::$kind => Message::$kind(serde_json::from_slice::<$ty>(bytes)?),)* })
            }

            /// Decodes an XML element's children as a message of `kind`.
            pub fn from_xml_element(kind: MessageKind, element: &crate::xml::Element) -> Result<Message, DecodeError> {
                Ok(match kind { $(MessageKind::$kind => Message::$kind(crate::xml::from_element::<$ty>(element)?),)* })
            }
        }
    };
}

messages! {
    Empty => bench::Empty;
    InventoryStatus => bench::InventoryStatus;
    DeviceList => bench::DeviceList;
    ItemList => bench::ItemList;
    Product => bench::Product;
    CloneRequest => bench::CloneRequest;
    CloneResponse => bench::CloneResponse;
    IntegerValue => bench::IntegerValue;
    IntegerList => bench::IntegerList;
    ObjectList => bench::ObjectList;
    FileRequest => bench::FileRequest;
    FileContent => bench::FileContent;
    EchoMessage => bench::EchoMessage;
    HelloRequest => helloworld::HelloRequest;
    HelloReply => helloworld::HelloReply;
}

impl Message {
    /// Encodes as a request body of `op` (XML: the SOAP envelope with
    /// `<Op>Request`).
    pub fn encode_request(&self, op: crate::Operation, encoding: Encoding) -> Vec<u8> {
        match encoding {
            Encoding::Xml => crate::soap::envelope(op.soap_request_element(), self).into_bytes(),
            Encoding::Graphql => crate::graphql::encode_request(op, self),
            _ => self.encode(encoding),
        }
    }

    /// Encodes as a response body of `op` (XML: the SOAP envelope with
    /// `<Op>Response`).
    pub fn encode_response(&self, op: crate::Operation, encoding: Encoding) -> Vec<u8> {
        match encoding {
            Encoding::Xml => crate::soap::envelope(op.soap_response_element(), self).into_bytes(),
            Encoding::Graphql => crate::graphql::encode_response(op, self),
            _ => self.encode(encoding),
        }
    }

    /// Encodes as protobuf or JSON; XML uses the `<Op>Response` element of the
    /// first operation returning this type and GraphQL the value under a root
    /// field, so prefer [`Message::encode_response`].
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        match encoding {
            Encoding::Protobuf => self.to_protobuf(),
            Encoding::Json => self.to_json(),
            Encoding::Xml => {
                let mut out = String::new();
                self.write_xml_element(&mut out, "Message");
                out.into_bytes()
            }
            Encoding::Graphql => crate::graphql::response_value(self),
        }
    }

    /// Decodes a request body of `op`.
    pub fn decode_request(op: crate::Operation, encoding: Encoding, bytes: &[u8]) -> Result<Message, DecodeError> {
        if encoding == Encoding::Graphql {
            return crate::graphql::decode_request(op, bytes);
        }
        Self::decode_as(op.request_kind(), op.soap_request_element(), encoding, bytes)
    }

    /// Decodes a response body of `op`.
    pub fn decode_response(op: crate::Operation, encoding: Encoding, bytes: &[u8]) -> Result<Message, DecodeError> {
        if encoding == Encoding::Graphql {
            let message = crate::graphql::decode_response(op, bytes)?;
            message.check_json_range()?;
            return Ok(message);
        }
        Self::decode_as(op.response_kind(), op.soap_response_element(), encoding, bytes)
    }

    /// The canonical JSON form carries floating-point values as JSON numbers
    /// (contract/openapi.yaml), so a request value that is not finite once
    /// read (a number beyond `float` range, or proto3's "Infinity"/"NaN"
    /// strings) is refused rather than echoed as something the schema does
    /// not allow. The request messages with floating-point fields are
    /// `Product` (price) and `HelloRequest` (d, f).
    fn check_json_range(&self) -> Result<(), DecodeError> {
        let bad = |field: &str, finite: bool| {
            if finite {
                Ok(())
            } else {
                Err(DecodeError::OutOfRange(format!(
                    "{field} is not a finite number in its type's range"
                )))
            }
        };
        match self {
            Message::Product(p) => bad("price", p.price.is_finite()),
            Message::HelloRequest(r) => match &r.request {
                Some(h) => {
                    bad("request.d", h.d.is_finite())?;
                    bad("request.f", h.f.is_finite())
                }
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    fn decode_as(kind: MessageKind, element: &str, encoding: Encoding, bytes: &[u8]) -> Result<Message, DecodeError> {
        match encoding {
            Encoding::Protobuf => Self::from_protobuf(kind, bytes),
            Encoding::Json => {
                let message = Self::from_json(kind, bytes)?;
                message.check_json_range()?;
                Ok(message)
            }
            Encoding::Xml => {
                let payload = crate::soap::parse_envelope(bytes)?;
                if payload.name != element || payload.namespace.as_deref() != Some(crate::SOAP_NAMESPACE) {
                    return Err(DecodeError::WrongElement {
                        found: payload.qualified_name(),
                        expected: format!("{{{}}}{element}", crate::SOAP_NAMESPACE),
                    });
                }
                Self::from_xml_element(kind, &payload)
            }
            Encoding::Graphql => unreachable!("GraphQL bodies are decoded by crate::graphql"),
        }
    }
}

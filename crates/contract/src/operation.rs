//! The contract's operations and where each lives in every protocol.

use crate::message::MessageKind;

/// An HTTP method used by the REST form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// `GET`, no request body.
    Get,
    /// `POST` with a JSON body.
    Post,
}

macro_rules! operations {
    ($( $op:ident => $service:literal, $req:ident, $resp:ident, $method:ident, $path:literal; )*) => {
        /// One operation of the contract; the name is the same in every protocol.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Operation {
            $(
                #[doc = concat!("`", stringify!($op), "`")]
                $op,
            )*
        }

        impl Operation {
            /// Every operation, in contract order.
            pub const ALL: &'static [Operation] = &[$(Operation::$op),*];

            /// The operation's name, e.g. `GetInventoryXs`.
            pub fn name(self) -> &'static str {
                match self { $(Operation::$op => stringify!($op),)* }
            }

            /// The gRPC path, e.g. `/protobench.v1.Bench/GetInventoryXs`.
            pub fn grpc_path(self) -> &'static str {
                match self { $(Operation::$op => concat!("/", $service, "/", stringify!($op)),)* }
            }

            /// The request message type.
            pub fn request_kind(self) -> MessageKind {
                match self { $(Operation::$op => MessageKind::$req,)* }
            }

            /// The response message type.
            pub fn response_kind(self) -> MessageKind {
                match self { $(Operation::$op => MessageKind::$resp,)* }
            }

            /// The REST method.
            pub fn http_method(self) -> HttpMethod {
                match self { $(Operation::$op => HttpMethod::$method,)* }
            }

            /// The REST path template (`{name}` is the only parameter).
            pub fn rest_path_template(self) -> &'static str {
                match self { $(Operation::$op => $path,)* }
            }

            /// The SOAP request element, e.g. `GetInventoryXsRequest`.
            pub fn soap_request_element(self) -> &'static str {
                match self { $(Operation::$op => concat!(stringify!($op), "Request"),)* }
            }

            /// The SOAP response element, e.g. `GetInventoryXsResponse`.
            pub fn soap_response_element(self) -> &'static str {
                match self { $(Operation::$op => concat!(stringify!($op), "Response"),)* }
            }

            /// The SOAPAction, e.g. `urn:protobench:v1#GetInventoryXs`.
            pub fn soap_action(self) -> &'static str {
                match self { $(Operation::$op => concat!("urn:protobench:v1#", stringify!($op)),)* }
            }
        }
    };
}

operations! {
    GetInventoryXs => "protobench.v1.Bench", Empty, Empty, Get, "/v1/inventory/xs";
    GetInventoryS => "protobench.v1.Bench", Empty, InventoryStatus, Get, "/v1/inventory/s";
    GetInventoryM => "protobench.v1.Bench", Empty, DeviceList, Get, "/v1/inventory/m";
    GetInventoryL => "protobench.v1.Bench", Empty, ItemList, Get, "/v1/inventory/l";
    EchoProduct => "protobench.v1.Bench", Product, Product, Post, "/v1/products/echo";
    ModifyProduct => "protobench.v1.Bench", Product, Product, Post, "/v1/products/modify";
    CloneText => "protobench.v1.Bench", CloneRequest, CloneResponse, Post, "/v1/tasks/clone";
    GetInteger => "protobench.v1.Bench", Empty, IntegerValue, Get, "/v1/tasks/integer";
    GetIntegers => "protobench.v1.Bench", Empty, IntegerList, Get, "/v1/tasks/integers";
    GetObjects => "protobench.v1.Bench", Empty, ObjectList, Get, "/v1/tasks/objects";
    GetFile => "protobench.v1.Bench", FileRequest, FileContent, Get, "/v1/tasks/files/{name}";
    Echo => "protobench.v1.Bench", EchoMessage, EchoMessage, Post, "/v1/echo";
    SayHello => "helloworld.Greeter", HelloRequest, HelloReply, Post, "/v1/greeter/hello";
}

impl Operation {
    /// Finds an operation by name.
    pub fn from_name(name: &str) -> Option<Operation> {
        Self::ALL.iter().copied().find(|op| op.name() == name)
    }

    /// Finds the operation served at a gRPC path.
    pub fn from_grpc_path(path: &str) -> Option<Operation> {
        Self::ALL.iter().copied().find(|op| op.grpc_path() == path)
    }

    /// Finds the operation whose SOAP request element is `element`.
    pub fn from_soap_request_element(element: &str) -> Option<Operation> {
        Self::ALL
            .iter()
            .copied()
            .find(|op| op.soap_request_element() == element)
    }

    /// The concrete REST path for a request (fills `{name}` for `GetFile`).
    pub fn rest_path(self, request: &crate::Message) -> String {
        match (self, request) {
            (Operation::GetFile, crate::Message::FileRequest(r)) => format!("/v1/tasks/files/{}", r.name),
            _ => self.rest_path_template().to_owned(),
        }
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

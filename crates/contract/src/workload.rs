//! The named workloads: each is one operation plus one request.

use crate::pb::{bench, helloworld};
use crate::{Message, Operation, data};

/// A named workload.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// The name, e.g. `inventory.m`.
    pub name: &'static str,
    /// The operation it calls.
    pub operation: Operation,
    /// What it carries, in one line.
    pub description: &'static str,
    build: fn() -> Message,
}

impl Workload {
    /// Builds the request (the large ones allocate a few MB).
    pub fn request(&self) -> Message {
        (self.build)()
    }
}

fn empty() -> Message {
    Message::Empty(bench::Empty {})
}

fn product(description: String) -> Message {
    Message::Product(bench::Product {
        id: 1001,
        name: "Wireless Mouse".into(),
        description,
        price: 24.5,
        stock: 120,
        tags: vec!["peripherals".into(), "usb".into()],
    })
}

fn clone(text: String, times: i32) -> Message {
    Message::CloneRequest(bench::CloneRequest { text, times })
}

fn echo(len: usize) -> Message {
    Message::EchoMessage(bench::EchoMessage {
        payload: data::ascii(0xEC40 + len as u64, len),
    })
}

fn hello_name(len: usize) -> Message {
    Message::HelloRequest(helloworld::HelloRequest {
        request: Some(helloworld::Hello {
            name: data::ascii(0x4E110 + len as u64, len),
            ..Default::default()
        }),
    })
}

fn complex() -> Message {
    use helloworld::hello::{Choice, Pet, pet::Color};
    Message::HelloRequest(helloworld::HelloRequest {
        request: Some(helloworld::Hello {
            name: "protobench".into(),
            d: 4.5,
            f: 232.25,
            b: true,
            n: 32,
            l: 444_325_235_223,
            choice: Some(Choice::C1("of course".into())),
            pets: vec![
                Pet {
                    name: "Rex the dog".into(),
                    color: Color::Blue as i32,
                },
                Pet {
                    name: "Tom the cat".into(),
                    color: Color::Red as i32,
                },
            ],
        }),
    })
}

/// The 615-character paragraph of `tasks.clone-lorem`.
pub fn lorem() -> String {
    const TEXT: &str = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor \
incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco \
laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit \
esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa \
qui officia deserunt mollit anim id est laborum. ";
    TEXT.chars().cycle().take(615).collect()
}

macro_rules! w {
    ($name:literal, $op:ident, $desc:literal, $build:expr) => {
        Workload {
            name: $name,
            operation: Operation::$op,
            description: $desc,
            build: $build,
        }
    };
}

/// Every workload, in a stable order.
pub static ALL: &[Workload] = &[
    w!("inventory.xs", GetInventoryXs, "empty request, empty response", empty),
    w!(
        "inventory.s",
        GetInventoryS,
        "empty request, status object (~646 B JSON)",
        empty
    ),
    w!(
        "inventory.m",
        GetInventoryM,
        "empty request, 480 devices (~50 KB JSON)",
        empty
    ),
    w!(
        "inventory.l",
        GetInventoryL,
        "empty request, 1,395 items (~500 KB JSON)",
        empty
    ),
    w!(
        "product.small",
        EchoProduct,
        "echo a product, 16-character description",
        || product("Ergonomic mouse.".into())
    ),
    w!(
        "product.typical",
        ModifyProduct,
        "reverse a 361-character description with non-ASCII letters",
        || { product(data::words(0x7E01, 361, 15)) }
    ),
    w!(
        "product.large",
        EchoProduct,
        "echo a product, 2,000,000-character description",
        || { product(data::words(0x7E02, 2_000_000, 2)) }
    ),
    w!(
        "product.stress",
        ModifyProduct,
        "reverse a 2,000,000-character description",
        || { product(data::words(0x7E03, 2_000_000, 2)) }
    ),
    w!("tasks.clone-hello", CloneText, "clone \"Hello World!\" once", || clone(
        "Hello World!".into(),
        1
    )),
    w!(
        "tasks.clone-lorem",
        CloneText,
        "clone a 615-character paragraph 1000 times",
        || clone(lorem(), 1000)
    ),
    w!("tasks.int", GetInteger, "one integer (2147483647)", empty),
    w!("tasks.ints", GetIntegers, "the integers 0..9999", empty),
    w!("tasks.objects", GetObjects, "16 small person records", empty),
    w!("tasks.file-455k", GetFile, "download a 455,000-byte file", || {
        Message::FileRequest(bench::FileRequest {
            name: "file-455k".into(),
        })
    }),
    w!("tasks.file-3m4", GetFile, "download a 3,400,000-byte file", || {
        Message::FileRequest(bench::FileRequest {
            name: "file-3m4".into(),
        })
    }),
    w!("echo.128b", Echo, "echo a 128-byte payload", || echo(128)),
    w!("echo.1k", Echo, "echo a 1,024-byte payload", || echo(1024)),
    w!("echo.8k", Echo, "echo an 8,192-byte payload", || echo(8192)),
    w!("echo.32k", Echo, "echo a 32,768-byte payload", || echo(32_768)),
    w!("echo.128k", Echo, "echo a 131,072-byte payload", || echo(131_072)),
    w!(
        "grpcbench.complex",
        SayHello,
        "grpc_bench complex_proto: nested message, oneof, repeated enum",
        complex
    ),
    w!(
        "grpcbench.string-10b",
        SayHello,
        "grpc_bench string_10B",
        || hello_name(10)
    ),
    w!("grpcbench.string-100b", SayHello, "grpc_bench string_100B", || {
        hello_name(100)
    }),
    w!("grpcbench.string-1k", SayHello, "grpc_bench string_1kB", || hello_name(
        1000
    )),
    w!("grpcbench.string-10k", SayHello, "grpc_bench string_10kB", || {
        hello_name(10_000)
    }),
];

/// The workload called `name`.
pub fn find(name: &str) -> Option<&'static Workload> {
    ALL.iter().find(|w| w.name == name)
}

/// An unknown-workload message that lists the valid names.
pub fn unknown(name: &str) -> String {
    let names: Vec<&str> = ALL.iter().map(|w| w.name).collect();
    format!("unknown workload {name:?}; valid workloads: {}", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dataset, Encoding};

    fn response_size(name: &str, encoding: Encoding) -> usize {
        let w = find(name).unwrap();
        let r = w.operation.respond(&w.request(), &Dataset::generate()).unwrap();
        r.encode(encoding).len()
    }

    fn within_2_percent(found: usize, published: usize) {
        let ratio = found as f64 / published as f64;
        assert!(
            (0.98..=1.02).contains(&ratio),
            "found {found} B, published {published} B (ratio {ratio:.4})"
        );
    }

    #[test]
    fn inventory_sizes_land_within_2_percent_of_berg_2023() {
        within_2_percent(response_size("inventory.s", Encoding::Json), 646);
        within_2_percent(response_size("inventory.m", Encoding::Json), 49_945);
        within_2_percent(response_size("inventory.m", Encoding::Protobuf), 22_080);
        within_2_percent(response_size("inventory.l", Encoding::Json), 500_820);
        within_2_percent(response_size("inventory.l", Encoding::Protobuf), 220_410);
    }

    #[test]
    fn product_and_task_requests_have_the_published_shapes() {
        let len = |name: &str| match find(name).unwrap().request() {
            Message::Product(p) => p.description.chars().count(),
            _ => unreachable!(),
        };
        assert_eq!(len("product.small"), 16);
        assert_eq!(len("product.typical"), 361);
        assert_eq!(len("product.large"), 2_000_000);
        assert_eq!(len("product.stress"), 2_000_000);
        assert_eq!(lorem().chars().count(), 615);
    }

    #[test]
    fn unknown_workload_lists_valid_names() {
        assert!(unknown("nope").contains("inventory.xs, inventory.s"));
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = ALL.iter().map(|w| w.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
    }
}

//! A closed standard output (`protobench report 1 --format csv | head`) ends
//! the program quietly with status 0, as ripgrep does, instead of a panic or
//! an error message: the reader has what it wanted.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with `EPIPE`.
//! Writes through `?` reach `main` as an error, which [`is_broken_pipe`]
//! recognizes; `print!`/`println!` panic instead, which the hook installed by
//! [`quiet_on_broken_stdout`] turns into a quiet exit. SIGPIPE itself is not
//! restored to its default: the engine and the servers write to sockets, where
//! a peer's reset must be an error, not the end of the process.

/// True when `err`'s chain holds an `EPIPE` I/O error.
pub(crate) fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Installs a panic hook that exits 0 on the panic `print!` raises when
/// standard output is a closed pipe; every other panic is reported as before.
pub(crate) fn quiet_on_broken_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        // std's message: "failed printing to stdout: Broken pipe (os error 32)".
        if message.starts_with("failed printing to stdout") && message.contains("os error 32") {
            std::process::exit(0);
        }
        default(info);
    }));
}

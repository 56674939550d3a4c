//! Emulated networks: the server on its own host behind a link of chosen
//! rate, delay, jitter and loss, and a measurement of what that link
//! achieves (docs/network.md).
//!
//! Why this shape: the load engine runs inside this process and must reach
//! the server without changes, so the generator stays in the runner's own
//! network namespace and only the server moves to a new one, joined by a
//! veth pair. Shaping uses the kernel's own tools (`tc`, nftables) where the
//! kernel has them and toxiproxy for delay where it lacks `netem`; which
//! mechanism shaped what is recorded, and the link is measured rather than
//! assumed.
//!
//! The life of a link around the points that run on it:
//!
//! ```no_run
//! use protobench_runner::network::{self, EmulatedLink, MeasureOptions, Network};
//!
//! # fn main() -> Result<(), network::NetworkError> {
//! let networks: Vec<Network> = vec!["wan-100m-40ms".parse().unwrap()];
//! // 1. before any point: can this machine apply every profile?
//! let plans = network::check(&networks)?;
//! // 2. per link: create, measure, store the report
//! let mut link = EmulatedLink::create(plans[0].as_ref().unwrap())?;
//! let achieved = link.measure(&MeasureOptions::default())?;
//! let report = link.report(achieved);
//! // 3. start the server inside (argv prefix or enter the spawning thread),
//! //    bound to link.bind_addr(); point the engine at link.expose(..)
//! let argv = link.host().wrap_command(&["./server".to_string()]);
//! # let _ = (argv, report);
//! // 4. drop the link: toxiproxy, rules, veth and namespace are removed
//! drop(link);
//! # Ok(())
//! # }
//! ```

mod capabilities;
mod link;
pub mod measure;
mod profile;
mod sys;
pub mod topology;
mod toxiproxy;

pub use capabilities::{Capabilities, ToxiproxyBins};
pub use link::{EmulatedLink, Mechanism, Mechanisms, ShapePlan, check, plan};
pub use measure::{
    AchievedDirection, AchievedLink, LinkBound, LinkReport, MeasureOptions, far_from_profile, link_bound,
};
pub use profile::{Direction, LinkProfile, NAMED, Network, named, parse_rate};
pub use topology::{ServerHost, cleanup_leftovers};

/// Why a link could not be checked, created or measured.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// This machine cannot apply the profile.
    #[error("{what} ({fix})")]
    Unavailable {
        /// What is missing.
        what: String,
        /// How to get it.
        fix: String,
    },
    /// A tool failed.
    #[error("`{command}` failed with {status}: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// What it wrote to stderr.
        stderr: String,
    },
    /// A tool or wait did not finish in time.
    #[error("`{command}` did not finish within {seconds} s")]
    Timeout {
        /// The command line, or what was awaited.
        command: String,
        /// The limit.
        seconds: u64,
    },
    /// A system call or socket failed.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The measurement could not complete.
    #[error("link measurement failed: {0}")]
    Measure(String),
}

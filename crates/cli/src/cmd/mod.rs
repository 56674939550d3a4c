//! One module per subcommand.

pub(crate) mod agent;
pub(crate) mod build;
pub(crate) mod common;
pub(crate) mod compare;
pub(crate) mod completions;
pub(crate) mod contract;
pub(crate) mod import;
pub(crate) mod kube;
pub(crate) mod load;
pub(crate) mod load_db;
pub(crate) mod load_stream;
pub(crate) mod man;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod serve;
pub(crate) mod servers;
pub(crate) mod show;
pub(crate) mod target;
pub(crate) mod threshold;
pub(crate) mod verify;

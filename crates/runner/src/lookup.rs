//! Finding a preset by name: in the presets directory, as a path, or the
//! built-in quick preset.

use std::fmt;
use std::path::Path;

use crate::plan::Plan;
use crate::preset::{Context, Overrides, PresetError, load_with, resolve_with};

/// The quick preset, built in so `protobench run` works outside the repository.
pub const QUICK: &str = include_str!("../../../presets/quick.toml");

/// Why [`find`] found no plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindError {
    /// No such preset: the file it looked for, and the presets there are.
    NotFound {
        /// The name asked for.
        name: String,
        /// The file looked for.
        path: std::path::PathBuf,
        /// Preset names in the directory (`quick` when there are none).
        known: Vec<String>,
    },
    /// The preset exists but cannot be run.
    Invalid(PresetError),
}

impl fmt::Display for FindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FindError::NotFound { name, path, known } => write!(
                f,
                "no preset `{name}` ({} does not exist; presets: {})",
                path.display(),
                known.join(", ")
            ),
            FindError::Invalid(e) => write!(f, "invalid preset\n{e}"),
        }
    }
}

impl std::error::Error for FindError {}

/// Finds a preset by name in `dir` (or as a path to a file) and resolves
/// it; `quick` is built in when the directory has none.
pub fn find(name: &str, dir: &Path, ctx: &Context) -> Result<Plan, FindError> {
    find_with(name, dir, ctx, &Overrides::default())
}

/// [`find`] with the command line's overrides of the preset's lists.
pub fn find_with(name: &str, dir: &Path, ctx: &Context, overrides: &Overrides) -> Result<Plan, FindError> {
    let path = if Path::new(name).is_file() {
        Path::new(name).to_owned()
    } else {
        dir.join(format!("{name}.toml"))
    };
    let result = if path.is_file() {
        load_with(&path, ctx, overrides)
    } else if name == "quick" {
        resolve_with(QUICK, "presets/quick.toml (built in)", ctx, overrides)
    } else {
        let mut known: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| {
                    let p = e.ok()?.path();
                    (p.extension()? == "toml").then(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))?
                })
                .collect()
            })
            .unwrap_or_default();
        known.sort();
        if known.is_empty() {
            known.push("quick".into());
        }
        return Err(FindError::NotFound {
            name: name.to_owned(),
            path,
            known,
        });
    };
    result.map_err(FindError::Invalid)
}

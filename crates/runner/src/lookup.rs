//! Finding a preset by name: as a path, in a presets directory, or among
//! the presets built into the binary (every `presets/*.toml` of the
//! repository it was built from), so that `protobench run NAME` works
//! wherever the binary is installed. A file on disk wins over the built-in
//! preset of the same name.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::plan::Plan;
use crate::preset::{CommandLine, Context, Overrides, PresetError, load_command, resolve_command};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/presets.rs"));
}

pub use embedded::BUILT_IN;

/// The text of the built-in preset `name`.
pub fn built_in(name: &str) -> Option<&'static str> {
    BUILT_IN.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// How a built-in preset is named in plans and errors.
pub fn built_in_label(name: &str) -> String {
    format!("presets/{name}.toml (built in)")
}

/// Why [`find`] found no plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindError {
    /// No such preset: the file it looked for, and the presets there are.
    NotFound {
        /// The name asked for.
        name: String,
        /// The file looked for (none without a presets directory).
        path: Option<PathBuf>,
        /// Every preset name known: the directory's and the built-in ones.
        known: Vec<String>,
    },
    /// The preset exists but cannot be run.
    Invalid(PresetError),
}

impl fmt::Display for FindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FindError::NotFound { name, path, known } => {
                write!(f, "no preset `{name}` (")?;
                if let Some(path) = path {
                    write!(f, "{} does not exist, no built-in one either; ", path.display())?;
                }
                write!(f, "presets: {})", known.join(", "))
            }
            // A bad command-line value is not a bad preset.
            FindError::Invalid(e) if e.command_line_only() => write!(f, "{e}"),
            FindError::Invalid(e) => write!(f, "invalid preset\n{e}"),
        }
    }
}

impl std::error::Error for FindError {}

/// Where a listed preset comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A file in the presets directory.
    File(PathBuf),
    /// Built into the binary.
    BuiltIn,
}

/// One preset that `protobench run NAME` can run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The name to run it by.
    pub name: String,
    /// Where it is read from.
    pub source: Source,
    /// Its `description` (empty when it has none or does not parse).
    pub description: String,
}

/// Every preset by name, sorted: the directory's files, and the built-in
/// presets that no file of the same name replaces.
pub fn list(dir: Option<&Path>) -> Vec<Listed> {
    let describe = |text: &str| {
        toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|t| t.get("description")?.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    let mut listed: Vec<Listed> = files(dir)
        .into_iter()
        .map(|(name, path)| Listed {
            description: std::fs::read_to_string(&path).map(|t| describe(&t)).unwrap_or_default(),
            name,
            source: Source::File(path),
        })
        .collect();
    for (name, text) in BUILT_IN {
        if !listed.iter().any(|l| l.name == *name) {
            listed.push(Listed {
                name: (*name).to_owned(),
                source: Source::BuiltIn,
                description: describe(text),
            });
        }
    }
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    listed
}

/// The `*.toml` files of `dir` by name.
fn files(dir: Option<&Path>) -> Vec<(String, PathBuf)> {
    let Some(entries) = dir.and_then(|d| std::fs::read_dir(d).ok()) else {
        return vec![];
    };
    entries
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_stem()?.to_str()?.to_owned();
            (path.extension()? == "toml" && path.is_file()).then_some((name, path))
        })
        .collect()
}

/// Finds a preset by name (or as a path to a file) and resolves it: a path,
/// then `dir/NAME.toml`, then the built-in preset `NAME`.
pub fn find(name: &str, dir: Option<&Path>, ctx: &Context) -> Result<Plan, FindError> {
    find_with(name, dir, ctx, &Overrides::default())
}

/// [`find`] with the command line's overrides of the preset's lists.
pub fn find_with(name: &str, dir: Option<&Path>, ctx: &Context, overrides: &Overrides) -> Result<Plan, FindError> {
    let command = CommandLine {
        lists: overrides.clone(),
        ..Default::default()
    };
    find_command(name, dir, ctx, &command)
}

/// [`find`] with everything the command line changes
/// ([`crate::preset::resolve_command`]: one conversion to a validated plan).
pub fn find_command(name: &str, dir: Option<&Path>, ctx: &Context, command: &CommandLine) -> Result<Plan, FindError> {
    let in_dir = dir.map(|d| d.join(format!("{name}.toml")));
    let result = if Path::new(name).is_file() {
        load_command(Path::new(name), ctx, command)
    } else if let Some(path) = in_dir.as_ref().filter(|p| p.is_file()) {
        load_command(path, ctx, command)
    } else if let Some(text) = built_in(name) {
        resolve_command(text, &built_in_label(name), ctx, command)
    } else {
        return Err(FindError::NotFound {
            name: name.to_owned(),
            path: in_dir,
            known: list(dir).into_iter().map(|l| l.name).collect(),
        });
    };
    result.map_err(FindError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context::for_tests()
    }

    fn repo_presets() -> Vec<String> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
        let mut names: Vec<String> = files(Some(&dir)).into_iter().map(|(n, _)| n).collect();
        names.sort();
        names
    }

    #[test]
    fn every_preset_of_the_repository_is_built_in_with_its_text() {
        let names: Vec<String> = BUILT_IN.iter().map(|(n, _)| (*n).to_owned()).collect();
        assert_eq!(names, repo_presets());
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
        for (name, text) in BUILT_IN {
            assert_eq!(
                *text,
                std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap()
            );
        }
    }

    #[test]
    fn without_a_directory_the_built_in_presets_are_found_and_listed() {
        let plan = find("quick", None, &ctx()).unwrap();
        assert_eq!(plan.preset, "quick");
        assert_eq!(plan.preset_path.as_deref(), Some("presets/quick.toml (built in)"));
        let listed = list(None);
        assert_eq!(
            listed.iter().map(|l| l.name.clone()).collect::<Vec<_>>(),
            repo_presets()
        );
        assert!(listed.iter().all(|l| l.source == Source::BuiltIn));
        let quick = listed.iter().find(|l| l.name == "quick").unwrap();
        assert!(
            quick.description.starts_with("rest, rest-h2, grpc and soap"),
            "{quick:?}"
        );
        let err = find("nosuch", None, &ctx()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("no preset `nosuch` (presets: {})", repo_presets().join(", "))
        );
    }

    #[test]
    fn a_file_in_the_directory_wins_over_the_built_in_preset() {
        let dir = tempfile::tempdir().unwrap();
        let text = "name = \"quick\"\ndescription = \"mine\"\nservers = [\"rust\"]\nprotocols = [\"grpc\"]\nworkloads = [\"tasks.int\"]\nduration = \"1s\"\n[load]\nconcurrency = 1\n";
        std::fs::write(dir.path().join("quick.toml"), text).unwrap();
        std::fs::write(dir.path().join("extra.toml"), text.replace("quick", "extra")).unwrap();
        let plan = find("quick", Some(dir.path()), &ctx()).unwrap();
        assert_eq!(plan.points.len(), 1);
        assert_eq!(
            plan.preset_path,
            Some(dir.path().join("quick.toml").display().to_string())
        );
        let listed = list(Some(dir.path()));
        let quick = listed.iter().find(|l| l.name == "quick").unwrap();
        assert_eq!(quick.source, Source::File(dir.path().join("quick.toml")));
        assert_eq!(quick.description, "mine");
        assert_eq!(listed.len(), repo_presets().len() + 1, "extra, and one quick");
        // Built-in presets the directory does not have are still found.
        assert!(find("network", Some(dir.path()), &ctx()).is_ok());
        let err = find("nosuch", Some(dir.path()), &ctx()).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "no preset `nosuch` ({} does not exist, no built-in one either; presets: berg2023, ",
                dir.path().join("nosuch.toml").display()
            )) && err.contains("extra"),
            "{err}"
        );
    }
}

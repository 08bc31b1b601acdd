//! Where SkillTrial keeps its state: the journal and the content-addressed store.
//!
//! Resolution order: an explicit `--home`, then `SKILLTRIAL_HOME`, then
//! `$XDG_DATA_HOME/skilltrial`, then `$HOME/.local/share/skilltrial`. Resolving never creates
//! anything: commands that only read (such as `validate`) leave the disk untouched.

use std::path::{Path, PathBuf};

/// The environment variable that overrides the state directory.
pub const HOME_ENV: &str = "SKILLTRIAL_HOME";

/// Where the state directory came from, for `--json` output and error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HomeSource {
    /// The `--home` flag.
    Flag,
    /// The `SKILLTRIAL_HOME` variable.
    Env,
    /// `$XDG_DATA_HOME/skilltrial`.
    XdgDataHome,
    /// `$HOME/.local/share/skilltrial`.
    DefaultDataDir,
}

/// The resolved state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateHome {
    /// The directory (not necessarily existing yet).
    pub path: PathBuf,
    /// Which rule chose it.
    pub source: HomeSource,
}

/// Why no state directory could be chosen.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HomeError {
    /// Neither a flag, `SKILLTRIAL_HOME`, `XDG_DATA_HOME` nor `HOME` gave a usable path.
    #[error(
        "cannot choose a state directory: pass --home DIR or set SKILLTRIAL_HOME (HOME and XDG_DATA_HOME are unset or not absolute)"
    )]
    Unresolvable,
    /// The chosen path exists and is not a directory (a file).
    #[error(
        "state directory {} is not a directory: give --home or SKILLTRIAL_HOME a directory, or a path that does not exist yet",
        .0.display()
    )]
    NotADirectory(PathBuf),
}

/// Resolves the state directory from an explicit flag and an environment lookup.
///
/// `env` is a parameter so that the rules test without touching the process environment.
pub fn resolve_home(
    flag: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<StateHome, HomeError> {
    if let Some(path) = flag {
        return Ok(StateHome {
            path: path.to_path_buf(),
            source: HomeSource::Flag,
        });
    }
    let non_empty = |key: &str| env(key).filter(|v| !v.is_empty());
    if let Some(value) = non_empty(HOME_ENV) {
        return Ok(StateHome {
            path: PathBuf::from(value),
            source: HomeSource::Env,
        });
    }
    // The XDG spec says relative values are invalid and must be ignored.
    if let Some(value) = non_empty("XDG_DATA_HOME").filter(|v| Path::new(v).is_absolute()) {
        return Ok(StateHome {
            path: Path::new(&value).join("skilltrial"),
            source: HomeSource::XdgDataHome,
        });
    }
    if let Some(value) = non_empty("HOME").filter(|v| Path::new(v).is_absolute()) {
        return Ok(StateHome {
            path: Path::new(&value).join(".local/share/skilltrial"),
            source: HomeSource::DefaultDataDir,
        });
    }
    Err(HomeError::Unresolvable)
}

/// The state directory as [`resolve_home`] chooses it, refused when it exists and is not a
/// directory (a file): otherwise commands that only read would call it "no runs yet" or "not
/// created yet" and those that write would fail deeper in. Creates nothing.
pub fn state_home(
    flag: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<StateHome, HomeError> {
    let home = resolve_home(flag, env)?;
    if std::fs::metadata(&home.path).is_ok_and(|m| !m.is_dir()) {
        return Err(HomeError::NotADirectory(home.path));
    }
    Ok(home)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn flag_beats_everything() {
        let env = env_of(&[("SKILLTRIAL_HOME", "/env"), ("HOME", "/home/u")]);
        let home = resolve_home(Some(Path::new("/flag")), env).unwrap();
        assert_eq!(
            home,
            StateHome {
                path: "/flag".into(),
                source: HomeSource::Flag
            }
        );
    }

    #[test]
    fn env_beats_xdg() {
        let env = env_of(&[("SKILLTRIAL_HOME", "/env"), ("XDG_DATA_HOME", "/xdg")]);
        assert_eq!(resolve_home(None, env).unwrap().path, PathBuf::from("/env"));
    }

    #[test]
    fn relative_xdg_is_ignored_per_spec() {
        let env = env_of(&[("XDG_DATA_HOME", "rel"), ("HOME", "/home/u")]);
        let home = resolve_home(None, env).unwrap();
        assert_eq!(home.path, PathBuf::from("/home/u/.local/share/skilltrial"));
        assert_eq!(home.source, HomeSource::DefaultDataDir);
    }

    #[test]
    fn nothing_usable_is_an_error() {
        assert_eq!(
            resolve_home(None, env_of(&[])),
            Err(HomeError::Unresolvable)
        );
    }
}

/// The files under a state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The state directory.
    pub root: PathBuf,
    /// The SQLite journal.
    pub journal: PathBuf,
    /// Content-addressed run inputs: manifests, bundle files, pack files.
    pub store: PathBuf,
    /// Content-addressed raw model payloads (requests, responses, answers); purgeable.
    pub payloads: PathBuf,
}

impl Layout {
    /// The layout under `root`. Creates nothing.
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            journal: root.join("journal.sqlite3"),
            store: root.join("store"),
            payloads: root.join("payloads"),
        }
    }
}

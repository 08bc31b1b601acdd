//! Checks on a user-given path before it is opened: a FIFO, socket or device is refused by name,
//! because reading one whole either blocks forever (a FIFO nobody writes) or never ends
//! (`/dev/zero`), and neither is what any command takes.

use std::path::Path;

use crate::exit::CliError;

/// `path` must be a regular file (symlinks followed); `wanted` completes "give …".
pub fn regular_file(path: &Path, wanted: &str) -> Result<std::fs::Metadata, CliError> {
    let meta = std::fs::metadata(path).map_err(|e| {
        CliError::Environment(anyhow::anyhow!("cannot read {}: {e}", path.display()))
    })?;
    if meta.is_dir() {
        return Err(CliError::Environment(anyhow::anyhow!(
            "{} is a directory: give {wanted}",
            path.display()
        )));
    }
    if !meta.is_file() {
        return Err(CliError::Environment(anyhow::anyhow!(
            "{} is not a regular file (a FIFO, socket or device): give {wanted}",
            path.display()
        )));
    }
    Ok(meta)
}

/// `path` must be a regular file or a directory, when it exists at all (a missing one is left
/// to the command, which says so in its own terms).
pub fn file_or_folder(path: &Path, wanted: &str) -> Result<(), CliError> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_dir() && !meta.is_file() => {
            Err(CliError::Environment(anyhow::anyhow!(
                "{} is not a regular file or a folder (a FIFO, socket or device): give {wanted}",
                path.display()
            )))
        }
        _ => Ok(()),
    }
}

/// Whether a prompt's answer approves: `y` or `yes`, in any case, around any spaces.
pub fn approves(answer: &str) -> bool {
    let answer = answer.trim();
    answer.eq_ignore_ascii_case("y") || answer.eq_ignore_ascii_case("yes")
}

/// Asks `question` on the terminal (stderr), followed by `prompt`; `y` or `yes` approves, and
/// anything else is the person's answer, not a failure: [`CliError::Declined`] with `declined`
/// (exit 0; it must say that nothing was sent). Without a terminal to ask on, refuses with
/// `question` and `no_terminal` (which names the flag that approves in scripts).
pub fn ask_yes(
    question: &str,
    prompt: &str,
    no_terminal: &str,
    declined: &str,
) -> Result<(), CliError> {
    use std::io::{IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return Err(CliError::Environment(anyhow::anyhow!(
            "{question} {no_terminal}"
        )));
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question}{prompt}");
    let _ = err.flush();
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    if approves(&answer) {
        Ok(())
    } else {
        Err(CliError::Declined(declined.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::approves;

    #[test]
    fn y_approves_wherever_yes_does_and_nothing_else_does() {
        for yes in ["y", "yes", "Y", "YES", "Yes", " y \n", "yes\r\n"] {
            assert!(approves(yes), "{yes:?}");
        }
        for no in [
            "", "\n", "n", "no", "N", "ye", "yess", "sure", "y es", "oui",
        ] {
            assert!(!approves(no), "{no:?}");
        }
    }
}

//! What the commands read from the person: paths checked before they are opened (the engine's
//! `files`, re-exported), and answers at a prompt.

use crate::exit::CliError;

pub use skilltrial_engine::files::{file_or_folder, regular_file};

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

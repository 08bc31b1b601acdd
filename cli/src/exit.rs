//! The one map from outcomes and errors to exit codes, and how errors are shown.
//!
//! 0: success, or the person declined at a prompt (nothing sent). 1: a check failed, or an input was read, judged and refused. 2: usage or
//! environment error (a bad flag value, caught by clap; I/O, permissions, a missing file, a
//! locked run, an unusable state directory, SQLite). 130: `run` stopped by Ctrl-C or SIGTERM
//! (the run is resumable). `gate`: 0 cleared, 1 missed, 3 inconclusive, and every error 2 (so
//! that 1 always means a missed gate). Each library error's `From` impl below chooses 1 or 2 once, so
//! commands propagate with plain `?` and add only context (which bundle, which file).

use std::io::Write;
use std::process::ExitCode;

use clap::error::ErrorKind as ClapKind;
use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_core::bundle;
use skilltrial_core::manifest::PlanError;
use skilltrial_core::pack::PackError;
use skilltrial_core::profile::ProfileError;
use skilltrial_engine::demo::DemoError;
use skilltrial_engine::engine::EngineError;
use skilltrial_engine::home::HomeError;
use skilltrial_engine::journal::JournalError;
use skilltrial_engine::keys::KeyError;
use skilltrial_engine::packs::PackOpenError;
use skilltrial_engine::provider::SetupError;
use skilltrial_engine::report::{ReportError, WriteError};
use skilltrial_engine::state::StateError;
use skilltrial_engine::store::StoreError;

/// How a command that ran to completion ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Everything checked out.
    Ok,
    /// A check failed or an input was rejected; the output says which.
    CheckFailed,
    /// An input could not be found or read; the output says which.
    Environment,
    /// `run` stopped on Ctrl-C or SIGTERM; the run is left resumable.
    Interrupted,
    /// `gate`: the evidence does not decide (exit 3).
    Inconclusive,
    /// `verify`: nothing failed, but a transaction it must check is not finalized yet: run it
    /// again later (exit 75, sysexits' "temporary failure").
    Pending,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> Self {
        match status {
            Status::Ok => ExitCode::SUCCESS,
            Status::CheckFailed => ExitCode::from(1),
            Status::Environment => ExitCode::from(2),
            Status::Interrupted => ExitCode::from(INTERRUPTED_EXIT),
            Status::Inconclusive => ExitCode::from(INCONCLUSIVE_EXIT),
            Status::Pending => ExitCode::from(PENDING_EXIT),
        }
    }
}

/// The exit code of a `run` stopped by Ctrl-C or SIGTERM (the first or a second), as shells
/// report an interrupted command.
pub const INTERRUPTED_EXIT: u8 = 130;

/// The exit code of a `gate` whose evidence does not decide.
pub const INCONCLUSIVE_EXIT: u8 = 3;

/// The exit code of a `verify` that found nothing wrong but must wait for a transaction to be
/// finalized (sysexits.h's `EX_TEMPFAIL`: try again later).
pub const PENDING_EXIT: u8 = 75;

/// An error that stopped a command before it could report normally.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The environment (state directory, files, terminal, output stream) is not usable: exit 2.
    #[error("{0:#}")]
    Environment(#[from] anyhow::Error),
    /// An input was read but rejected (a malformed pack, an unreadable answer): exit 1.
    #[error("{0:#}")]
    Rejected(anyhow::Error),
    /// The person said no at a prompt: not a failure, so exit 0, with the message (which says
    /// that nothing was sent) in place of the command's output.
    #[error("{0}")]
    Declined(String),
}

impl CliError {
    /// The same exit code, with `context` said before the message: for a command that knows
    /// more than the library error does (which bundle, which file).
    pub fn context(self, context: impl std::fmt::Display + Send + Sync + 'static) -> Self {
        match self {
            CliError::Environment(e) => CliError::Environment(e.context(context)),
            CliError::Rejected(e) => CliError::Rejected(e.context(context)),
            CliError::Declined(m) => CliError::Declined(m),
        }
    }

    /// The same exit code, with the message a command wrote in its place (one that adds a hint
    /// after the library's message).
    pub fn reworded(self, message: String) -> Self {
        match self {
            CliError::Environment(_) => CliError::Environment(anyhow::Error::msg(message)),
            CliError::Rejected(_) => CliError::Rejected(anyhow::Error::msg(message)),
            CliError::Declined(m) => CliError::Declined(m),
        }
    }
}

// One `From` per library error the commands see: each decides here, once, whether the error
// judged an input and refused it (exit 1) or found the environment unusable (exit 2: I/O,
// permissions, a missing file or state directory, a locked run, SQLite). Commands use plain `?`.

impl From<EngineError> for CliError {
    /// A refusal about the run's inputs is a rejection (1); the machine in the way, the journal
    /// or the store failing is the environment (2).
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Refused(_) => CliError::Rejected(e.into()),
            EngineError::Environment(_) => CliError::Environment(e.into()),
            EngineError::Store(e) => e.into(),
            EngineError::Journal(e) => e.into(),
        }
    }
}

impl From<JournalError> for CliError {
    /// The journal is state, not input: whatever stops it (SQLite, a newer schema, a row that
    /// breaks an invariant) leaves the state directory unusable for this command (2).
    fn from(e: JournalError) -> Self {
        CliError::Environment(e.into())
    }
}

impl From<StoreError> for CliError {
    /// A store that cannot be read or written is the environment (2). One that was read and
    /// holds content that is missing, no longer matches its hash or does not parse is an input
    /// judged and refused (1): a run whose stored inputs changed is not sent.
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Io { .. } => CliError::Environment(e.into()),
            StoreError::Missing(_) | StoreError::Corrupt(_) | StoreError::NotATree(_) => {
                CliError::Rejected(e.into())
            }
        }
    }
}

impl From<ReportError> for CliError {
    /// A run whose recorded content cannot make a report is refused (1); a journal or store
    /// that cannot be read is the environment (2).
    fn from(e: ReportError) -> Self {
        match e {
            ReportError::Invalid(_) | ReportError::Model(_) => CliError::Rejected(e.into()),
            ReportError::Journal(e) => e.into(),
            ReportError::Store(e) => e.into(),
        }
    }
}

impl From<skilltrial_core::report::ReportError> for CliError {
    /// A document that is not a report of this format, or whose content cannot be sealed, is
    /// refused (1).
    fn from(e: skilltrial_core::report::ReportError) -> Self {
        CliError::Rejected(e.into())
    }
}

impl From<WriteError> for CliError {
    /// Building follows [`ReportError`]; the lock probe, the directories and the files are the
    /// environment (2).
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Build(e) => e.into(),
            WriteError::Store(e) => e.into(),
            WriteError::Liveness(_) | WriteError::CreateDir { .. } | WriteError::Write { .. } => {
                CliError::Environment(e.into())
            }
        }
    }
}

impl From<PackError> for CliError {
    /// A pack or task that is not there, or a folder that cannot be read, is a usage or
    /// environment error (2); a pack that was read and is malformed is rejected (1).
    fn from(e: PackError) -> Self {
        match e {
            PackError::NotFound(_) | PackError::NoTask { .. } | PackError::Io { .. } => {
                CliError::Environment(e.into())
            }
            PackError::Invalid { .. } => CliError::Rejected(e.into()),
        }
    }
}

impl From<bundle::Rejected> for CliError {
    /// A bundle that is missing or unreadable is the environment (2); one that was read and
    /// breaks a rule is rejected (1).
    fn from(e: bundle::Rejected) -> Self {
        if e.errors.iter().any(|r| r.code.is_environment()) {
            CliError::Environment(e.into())
        } else {
            CliError::Rejected(e.into())
        }
    }
}

impl From<ProfileError> for CliError {
    /// A profile id, profiles file, endpoint or model name the user gave that cannot be used:
    /// a usage or environment error (2).
    fn from(e: ProfileError) -> Self {
        CliError::Environment(e.into())
    }
}

impl From<PlanError> for CliError {
    /// Options that cannot make a plan (caps, limits, endpoint) are a usage error (2).
    fn from(e: PlanError) -> Self {
        CliError::Environment(anyhow::anyhow!("cannot plan: {e}"))
    }
}

impl From<StateError> for CliError {
    /// A state directory whose journal or stores cannot be opened is unusable (2).
    fn from(e: StateError) -> Self {
        CliError::Environment(e.into())
    }
}

impl From<PackOpenError> for CliError {
    /// Opening decides as [`PackError`] (a name given without its version is not found: 2); a
    /// pack with no task, or a folder whose claims fail, was read and refused (1).
    fn from(e: PackOpenError) -> Self {
        match e {
            PackOpenError::Open(e) => e.into(),
            PackOpenError::Unversioned { .. } => CliError::Environment(anyhow::anyhow!("{e}")),
            PackOpenError::NoTask { .. } | PackOpenError::FailsClaims { .. } => {
                CliError::Rejected(anyhow::anyhow!("{e}"))
            }
        }
    }
}

impl From<DemoError> for CliError {
    /// Each step's error decides as that library's does; a bundle as [`bundle::Rejected`], with
    /// which bundle it is; the demo's own refusals (an unconfirmed unpriced profile, too many
    /// repetitions for its cap) and a scripted model that cannot start are usage or environment
    /// errors (2); the command's own error comes back as it was.
    fn from(e: DemoError) -> Self {
        match e {
            DemoError::Bundle { ref source, .. } => {
                let message = e.to_string();
                let code = CliError::from(source.clone());
                code.reworded(message)
            }
            DemoError::Pack(e) => e.into(),
            DemoError::Profile(e) => e.into(),
            DemoError::Plan(e) => e.into(),
            DemoError::Home(e) => e.into(),
            DemoError::State(e) => e.into(),
            DemoError::Engine(e) => e.into(),
            DemoError::Setup(e) => e.into(),
            DemoError::Journal(e) => e.into(),
            DemoError::Report(e) => e.into(),
            DemoError::Caller(e) => match e.downcast::<CliError>() {
                Ok(own) => *own,
                Err(other) => CliError::Environment(anyhow::anyhow!("{other}")),
            },
            DemoError::ScriptedModel(_)
            | DemoError::Unconfirmed { .. }
            | DemoError::OverCap { .. }
            | DemoError::RunMissing { .. } => CliError::Environment(anyhow::anyhow!("{e}")),
        }
    }
}

impl From<HomeError> for CliError {
    fn from(e: HomeError) -> Self {
        CliError::Environment(e.into())
    }
}

impl From<KeyError> for CliError {
    /// The keychain is the environment, as is an empty key on standard input (2).
    fn from(e: KeyError) -> Self {
        CliError::Environment(e.into())
    }
}

impl From<SetupError> for CliError {
    /// No key, or an endpoint a key may not travel to: the environment (2).
    fn from(e: SetupError) -> Self {
        CliError::Environment(e.into())
    }
}

impl From<skilltrial_engine::files::FileError> for CliError {
    /// A named file that is missing, unreadable or not a regular file is the environment (2);
    /// one that was read and is not what it must be (a report that is not one) is refused (1).
    fn from(e: skilltrial_engine::files::FileError) -> Self {
        if e.is_environment() {
            CliError::Environment(e.into())
        } else {
            CliError::Rejected(e.into())
        }
    }
}

/// The errors of the on-chain commands (feature `chain`): the Solana client's and the runner
/// client's, each decided here once like the local ones above.
#[cfg(feature = "chain")]
mod chain_errors {
    use skilltrial_chain::cli_config::ConventionError;
    use skilltrial_chain::escrow::{EscrowError, OpenError};
    use skilltrial_chain::rpc::RpcFailure;
    use skilltrial_chain::send::SendError;
    use skilltrial_chain::session::SessionError;
    use skilltrial_runner::client::ClientError;
    use skilltrial_runner::client::escrow::EscrowPlanError;
    use skilltrial_runner::client::report::DownloadError;
    use skilltrial_runner::client::status::FollowError;
    use skilltrial_runner::client::submit::SubmitError;

    use super::CliError;

    impl From<SendError> for CliError {
        /// Refused or failed on-chain is an input the cluster judged (1); an unreachable node,
        /// an unusable outbox or an expiry is the environment (2). The message says whether the
        /// transaction was recorded (and may still land, and how to resume it) or never signed.
        fn from(e: SendError) -> Self {
            match e {
                SendError::Refused(_) | SendError::FailedOnChain { .. } | SendError::Build(_) => {
                    CliError::Rejected(anyhow::anyhow!("{}", e.explain()))
                }
                SendError::Rpc(_)
                | SendError::BeforeSigning(_)
                | SendError::Outbox(_)
                | SendError::Expired(_) => {
                    CliError::Environment(anyhow::anyhow!("{}", e.explain()))
                }
            }
        }
    }

    impl From<RpcFailure> for CliError {
        /// A read failure is the endpoint (2), except an account that is not the program's,
        /// which judges the address given (1).
        fn from(e: RpcFailure) -> Self {
            match e {
                RpcFailure::NotTheProgramsAccount { .. } => {
                    CliError::Rejected(anyhow::anyhow!("{e}"))
                }
                _ => CliError::Environment(anyhow::anyhow!("{e}")),
            }
        }
    }

    impl From<EscrowError> for CliError {
        /// A Run that is not there, not the wallet's, or not in a state for the operation is a
        /// judged input (1); the session's failures decide as below.
        fn from(e: EscrowError) -> Self {
            match e {
                EscrowError::Session(e) => e.into(),
                refused => CliError::Rejected(anyhow::anyhow!("{refused}")),
            }
        }
    }

    impl From<OpenError> for CliError {
        /// An escrow the program would refuse is a judged input (1); a Run that landed but is
        /// not shown yet is the node (2); the session decides as below.
        fn from(e: OpenError) -> Self {
            match e {
                OpenError::Session(e) => e.into(),
                OpenError::NoConfig { .. } | OpenError::NotShownYet { .. } => {
                    CliError::Environment(anyhow::anyhow!("{e}"))
                }
                refused => CliError::Rejected(anyhow::anyhow!("{refused}")),
            }
        }
    }

    impl From<SessionError> for CliError {
        /// The session's own failures (flags, config file, wallet, state directory, outbox) are
        /// the environment (2); a read or a send decides as above.
        fn from(e: SessionError) -> Self {
            match e {
                SessionError::Rpc(e) => e.into(),
                SessionError::Send(e) => e.into(),
                other => CliError::Environment(anyhow::anyhow!("{other}")),
            }
        }
    }

    impl From<ConventionError> for CliError {
        /// The Solana CLI's conventions (a URL, a config file, a keypair file) that cannot be
        /// used: the environment (2).
        fn from(e: ConventionError) -> Self {
            CliError::Environment(anyhow::anyhow!("{e}"))
        }
    }

    impl From<ClientError> for CliError {
        /// A runner daemon that cannot be reached, or fails (5xx), is the environment (2); one
        /// that refuses the request (4xx) judged it (1).
        fn from(e: ClientError) -> Self {
            match e {
                ClientError::Unreachable(m) => CliError::Environment(anyhow::anyhow!(
                    "{m} (is the runner daemon running at that URL?)"
                )),
                ClientError::Refused {
                    status,
                    code,
                    message,
                } => {
                    let err = anyhow::anyhow!("the runner refused ({status} {code}): {message}");
                    if status >= 500 {
                        CliError::Environment(err)
                    } else {
                        CliError::Rejected(err)
                    }
                }
            }
        }
    }

    impl From<EscrowPlanError> for CliError {
        /// A manifest whose trials or terms cannot be escrowed is a judged input (1); the
        /// program's checks and the session decide as above.
        fn from(e: EscrowPlanError) -> Self {
            match e {
                EscrowPlanError::Open(e) => e.into(),
                EscrowPlanError::Session(e) => e.into(),
                refused => CliError::Rejected(anyhow::anyhow!("{refused}")),
            }
        }
    }

    impl From<SubmitError> for CliError {
        /// A runner on another cluster, a deadline below the runner's minimum or stored inputs
        /// that cannot be sent are judged inputs (1); a runner that answers with another key or
        /// stores the manifest under another hash is not a runner to escrow for (2). The store,
        /// the runner, the cluster and the escrow decide as above.
        fn from(e: SubmitError) -> Self {
            match e {
                SubmitError::Engine(e) => e.into(),
                SubmitError::Store(e) => e.into(),
                SubmitError::Client(e) => e.into(),
                SubmitError::Session(e) => e.into(),
                SubmitError::Escrow(e) => e.into(),
                SubmitError::NotAKey { .. } | SubmitError::StoredAs { .. } => {
                    CliError::Environment(anyhow::anyhow!("{e}"))
                }
                refused => CliError::Rejected(anyhow::anyhow!("{refused}")),
            }
        }
    }

    impl From<FollowError> for CliError {
        /// A runner gone for longer than the follower waits is the environment (2).
        fn from(e: FollowError) -> Self {
            match e {
                FollowError::Client(e) => e.into(),
                gone => CliError::Environment(anyhow::anyhow!("{gone}")),
            }
        }
    }

    impl From<DownloadError> for CliError {
        /// A report that does not prove itself is a judged input (1); the runner decides as
        /// above.
        fn from(e: DownloadError) -> Self {
            match e {
                DownloadError::Client(e) => e.into(),
                DownloadError::Chain(e) => e.into(),
                refused => CliError::Rejected(anyhow::anyhow!("{refused}")),
            }
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::Environment(e.into())
    }
}

/// Prints a command error (text on stderr, or JSON on stdout) and returns its exit code.
pub fn report(error: &CliError, json: bool) -> ExitCode {
    match error {
        CliError::Environment(e) => {
            emit_error(ErrorKind::Environment, &chain_text(e), json);
            ExitCode::from(2)
        }
        CliError::Rejected(e) => {
            emit_error(ErrorKind::Rejected, &chain_text(e), json);
            ExitCode::from(1)
        }
        CliError::Declined(message) => {
            if json {
                one_line(&Declined {
                    declined: true,
                    message: message.clone(),
                });
            } else {
                let _ = writeln!(std::io::stderr().lock(), "{message}");
            }
            ExitCode::SUCCESS
        }
    }
}

/// The error and its causes joined by ": ", each cause said once. A thiserror message that
/// embeds `{source}` while also marking it `#[source]` (the store's and the journal's errors do,
/// so that they read whole on their own) would otherwise be followed by that same cause again;
/// rusqlite's error is in turn followed by SQLite's, which restates it with its code. So a cause
/// already said, or one that only restates the cause before it, is left out: once, here, for
/// every error the CLI prints.
pub fn chain_text(error: &anyhow::Error) -> String {
    let mut out = String::new();
    let mut previous = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        let restates = !previous.is_empty() && text.contains(previous.as_str());
        if !(out.contains(text.as_str()) || restates) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        previous = text;
    }
    out
}

/// Prints a clap outcome: help and version go to stdout with exit 0, usage errors exit 2.
pub fn clap_error(error: &clap::Error, json: bool) -> ExitCode {
    match error.kind() {
        ClapKind::DisplayHelp | ClapKind::DisplayVersion => {
            let _ = error.print();
            ExitCode::SUCCESS
        }
        _ if json => {
            let message = error.render().to_string();
            emit_error(ErrorKind::Usage, message.trim(), true);
            ExitCode::from(2)
        }
        _ => {
            let _ = error.print();
            ExitCode::from(2)
        }
    }
}

/// `--json`'s document for a command that failed (exit 1 or 2), on stdout in one line.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Failed {
    pub error: ErrorBody,
}

/// What failed and why.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorBody {
    /// What kind of failure it is: it decides the exit code.
    pub kind: ErrorKind,
    /// The error and its causes, each said once, joined by ": ".
    pub message: String,
}

/// The kinds of failure, as `--json` names them.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// An input was read, judged and refused (exit 1).
    Rejected,
    /// The environment failed: I/O, permissions, a missing file, a locked run, SQLite (exit 2).
    Environment,
    /// The command line does not parse: clap's message (exit 2).
    Usage,
}

/// `--json`'s document when the person declined at a prompt: nothing was sent (exit 0).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Declined {
    /// Always `true`.
    pub declined: bool,
    /// What was not done.
    pub message: String,
}

/// Writes one document as one line on stdout (an error's document is read line by line).
fn one_line(document: &impl Serialize) {
    if let Ok(line) = serde_json::to_string(document) {
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
}

fn emit_error(kind: ErrorKind, message: &str, json: bool) {
    if json {
        one_line(&Failed {
            error: ErrorBody {
                kind,
                message: message.to_owned(),
            },
        });
    } else {
        let _ = writeln!(std::io::stderr().lock(), "error: {message}");
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use skilltrial_core::bundle::{RejectCode, Rejected as BundleRejected, Rejection};
    use skilltrial_core::digest::Sha256Digest;

    use super::*;

    /// The exit code and the message a command error ends with.
    fn shown(error: impl Into<CliError>) -> (u8, String) {
        match error.into() {
            CliError::Environment(e) => (2, chain_text(&e)),
            CliError::Rejected(e) => (1, chain_text(&e)),
            CliError::Declined(m) => (0, m),
        }
    }

    fn io() -> std::io::Error {
        std::io::Error::other("Is a directory (os error 21)")
    }

    fn store_io() -> StoreError {
        StoreError::Io {
            path: PathBuf::from("/s/x"),
            source: io(),
        }
    }

    #[test]
    fn io_and_state_failures_exit_2_and_judged_inputs_exit_1() {
        let digest = Sha256Digest::of(b"");
        // The store: unreadable is the environment; read and found wrong is a refusal.
        assert_eq!(shown(store_io()).0, 2);
        assert_eq!(shown(StoreError::Corrupt(digest)).0, 1);
        assert_eq!(shown(StoreError::Missing(digest)).0, 1);
        // The engine: a refusal is 1, the machine in the way 2, and a store or journal inside
        // keeps its own code.
        assert_eq!(
            shown(EngineError::Refused(
                skilltrial_engine::engine::Refusal::TemplateMismatch
            )),
            (
                1,
                "the manifest pins another prompt template than this binary's: plan again"
                    .to_owned()
            )
        );
        assert_eq!(shown(EngineError::Environment("locked".to_owned())).0, 2);
        assert_eq!(
            shown(EngineError::Store(store_io())),
            (2, "store /s/x: Is a directory (os error 21)".to_owned())
        );
        assert_eq!(shown(EngineError::Store(StoreError::Corrupt(digest))).0, 1);
        assert_eq!(
            shown(EngineError::Journal(JournalError::State("x".to_owned()))).0,
            2
        );
        // The report: content that cannot make one is refused; SQLite or the store failing
        // under it is the environment.
        assert_eq!(shown(ReportError::Invalid("no manifest".to_owned())).0, 1);
        assert_eq!(shown(ReportError::Store(store_io())).0, 2);
        assert_eq!(
            shown(ReportError::Journal(JournalError::State("x".to_owned()))).0,
            2
        );
        // A pack: not there (a name, a task, a folder) is 2; malformed is 1.
        assert_eq!(shown(PackError::NotFound("p".to_owned())).0, 2);
        assert_eq!(
            shown(PackError::NoTask {
                pack: "p".to_owned(),
                task: "t".to_owned(),
                known: "u".to_owned()
            })
            .0,
            2
        );
        assert_eq!(
            shown(PackError::Io {
                path: PathBuf::from("/p"),
                source: io()
            })
            .0,
            2
        );
        let invalid = PackError::Invalid {
            pack: "p".to_owned(),
            path: "pack.json".to_owned(),
            message: "missing".to_owned(),
        };
        assert_eq!(shown(invalid).0, 1);
        assert_eq!(shown(io()).0, 2);
    }

    #[test]
    fn a_bundle_is_the_environment_only_when_it_cannot_be_read() {
        let rejected = |code| BundleRejected {
            input: "./b".to_owned(),
            errors: vec![Rejection {
                code,
                path: None,
                message: "why".to_owned(),
            }],
        };
        assert_eq!(shown(rejected(RejectCode::NotFound)).0, 2);
        assert_eq!(shown(rejected(RejectCode::Unreadable)).0, 2);
        assert_eq!(
            shown(rejected(RejectCode::PathTraversal)),
            (1, "bundle ./b rejected: path_traversal: why".to_owned())
        );
        // A command's context keeps the code.
        let with_label = CliError::from(rejected(RejectCode::NotFound)).context("bundle A");
        assert_eq!(
            shown(with_label),
            (
                2,
                "bundle A: bundle ./b rejected: not_found: why".to_owned()
            )
        );
    }

    #[test]
    fn a_demo_error_keeps_the_exit_code_and_message_of_the_step_that_failed() {
        let rejected = |code| BundleRejected {
            input: "./b".to_owned(),
            errors: vec![Rejection {
                code,
                path: None,
                message: "why".to_owned(),
            }],
        };
        let bundle = |code| DemoError::Bundle {
            label: "B",
            path: Some(PathBuf::from("./b")),
            source: rejected(code),
        };
        // A bundle: which one and how to see why, with the bundle's own code.
        assert_eq!(
            shown(bundle(RejectCode::NotFound)),
            (
                2,
                "bundle B: bundle ./b rejected: not_found: why (run `skilltrial validate ./b` for details)"
                    .to_owned()
            )
        );
        assert_eq!(shown(bundle(RejectCode::PathTraversal)).0, 1);
        // A pack: not found under a bare name is 2, a folder whose claims fail is 1.
        assert_eq!(
            shown(DemoError::Pack(PackOpenError::Unversioned {
                source: PackError::NotFound("solana-core".to_owned()),
                versions: vec!["solana-core@1.0.3".to_owned()],
            })),
            (
                2,
                format!(
                    "{}; did you mean solana-core@1.0.3?",
                    PackError::NotFound("solana-core".to_owned())
                )
            )
        );
        assert_eq!(
            shown(DemoError::Pack(PackOpenError::NoTask {
                spec: "./p".to_owned()
            }))
            .0,
            1
        );
        // A plan is a usage error said as such, as from `plan`.
        assert_eq!(
            shown(DemoError::Plan(PlanError::Invalid("x".to_owned()))),
            (2, "cannot plan: x".to_owned())
        );
        // The command's own error comes back as it was, code and message.
        let own = CliError::Rejected(anyhow::anyhow!("mine"));
        assert_eq!(
            shown(DemoError::Caller(Box::new(own))),
            (1, "mine".to_owned())
        );
    }

    #[test]
    fn plan_errors_are_usage_errors_said_as_such() {
        assert_eq!(
            shown(PlanError::Invalid("--reps must be at least 1".to_owned())),
            (2, "cannot plan: --reps must be at least 1".to_owned())
        );
    }

    #[cfg(feature = "chain")]
    #[test]
    fn the_runner_clients_refusals_exit_1_and_a_runner_or_node_not_there_exits_2() {
        use skilltrial_core::hosted::TermsError;
        use skilltrial_runner::client::ClientError;
        use skilltrial_runner::client::escrow::EscrowPlanError;
        use skilltrial_runner::client::report::DownloadError;
        use skilltrial_runner::client::status::FollowError;
        use skilltrial_runner::client::submit::SubmitError;
        let url: url::Url = "http://127.0.0.1:1/"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        // `submit`: what it judged is 1, a runner that is not one to escrow for is 2, and what
        // it wraps keeps its own code and words.
        assert_eq!(
            shown(SubmitError::OtherCluster {
                runner_url: url.to_string(),
                runner_chain: "localnet".to_owned(),
                cluster: "https://api.devnet.solana.com/".to_owned(),
                ours: "devnet",
            }),
            (
                1,
                "the runner at http://127.0.0.1:1/ settles on localnet; your --url https://api.devnet.solana.com/ is devnet: give the same cluster".to_owned()
            )
        );
        assert_eq!(
            shown(SubmitError::DeadlineBelowRunner {
                given: 60,
                min: 240
            })
            .0,
            1
        );
        assert_eq!(shown(SubmitError::BundleDigest("zz".to_owned())).0, 1);
        assert_eq!(
            shown(SubmitError::NotAKey {
                runner_url: url.to_string(),
                key: "k".to_owned()
            })
            .0,
            2
        );
        assert_eq!(
            shown(SubmitError::StoredAs {
                stored: "a".to_owned(),
                manifest: "b".to_owned()
            })
            .0,
            2
        );
        assert_eq!(
            shown(SubmitError::Client(ClientError::Unreachable(
                "GET /v1/info: refused".to_owned()
            ))),
            (
                2,
                "GET /v1/info: refused (is the runner daemon running at that URL?)".to_owned()
            )
        );
        assert_eq!(shown(SubmitError::Store(store_io())).0, 2);
        // The escrow's terms are judged (1), even a plan that cannot be rebuilt (which `plan`
        // itself reports as a usage error).
        assert_eq!(
            shown(EscrowPlanError::Terms {
                manifest: "ab".to_owned(),
                source: TermsError::NoRate
            }),
            (
                1,
                "manifest ab: no SOL/USD rate is pinned in it, so its cost cannot be escrowed in lamports; plan it with --sol-usd <USD per SOL>".to_owned()
            )
        );
        assert_eq!(
            shown(EscrowPlanError::Trials(PlanError::Invalid("x".to_owned()))).0,
            1
        );
        // `status --remote --follow`: a runner gone for two minutes is the environment.
        assert_eq!(
            shown(FollowError::GaveUp {
                url,
                run: "R".to_owned()
            })
            .0,
            2
        );
        // `report --remote`: a report that does not prove itself is refused.
        assert_eq!(
            shown(DownloadError::NotUtf8),
            (1, "the runner's report.json is not UTF-8".to_owned())
        );
    }

    /// Like the store's and the journal's errors: the message embeds its source and also marks
    /// it as the source.
    #[derive(Debug, thiserror::Error)]
    #[error("store /tmp/q1: {source}")]
    struct Embeds {
        #[source]
        source: std::io::Error,
    }

    #[test]
    fn a_cause_embedded_in_its_error_is_said_once() {
        let io = std::io::Error::other("Is a directory (os error 21)");
        let error = anyhow::Error::from(Embeds { source: io }).context("cannot write the report");
        assert_eq!(
            chain_text(&error),
            "cannot write the report: store /tmp/q1: Is a directory (os error 21)"
        );
        // A chain of distinct causes keeps every one.
        let plain = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(chain_text(&plain), "outer: middle: inner");
    }
}

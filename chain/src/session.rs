//! A session with one cluster, as every on-chain command (and the runner's operator commands)
//! opens it: the Solana CLI's conventions resolved (flag > config.yml > default), the wallet
//! read from its keypair file, the outbox every transaction is written to before it is sent,
//! and sending through it. Pending transactions an earlier process left are driven to their end
//! before a signer is handed out.

use std::path::{Path, PathBuf};

use solana_keypair::Keypair;

use crate::cli_config::{self, ConventionError, SolanaConfig};
use crate::outbox::{Entry, EntryState, Outbox, OutboxError};
use crate::rpc::{Chain, RpcFailure};
use crate::send::{Fees, SendError, Sender, Sent};

/// The outbox's file name in a state directory.
pub const OUTBOX_FILE: &str = "chain-outbox.sqlite";

/// The Solana CLI's connection flags as given (each `None` when not given).
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags<'a> {
    pub url: Option<&'a str>,
    pub keypair: Option<&'a Path>,
    pub commitment: Option<&'a str>,
    pub config_file: Option<&'a Path>,
    pub fees: Fees,
}

/// Why a session could not be opened or could not do what was asked. Every message names the
/// input (the flag, the file) and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("--config {}: no such file", .0.display())]
    NoConfigFile(PathBuf),
    #[error("--config {}: not a regular file (a folder, FIFO or device)", .0.display())]
    ConfigNotAFile(PathBuf),
    /// A value read from the config file, named with it rather than as a flag never typed.
    #[error("the Solana CLI config's json_rpc_url: {0}")]
    ConfigUrl(String),
    #[error(transparent)]
    Convention(ConventionError),
    #[error("{0}. Create one with `solana-keygen new`, or name yours with --keypair")]
    Wallet(ConventionError),
    /// The state directory that holds the outbox could not be resolved.
    #[error("{0}")]
    StateDir(String),
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    #[error(transparent)]
    Rpc(#[from] RpcFailure),
    #[error(transparent)]
    Send(#[from] SendError),
}

/// A connection to a cluster, with the wallet when the command signs.
pub struct Session {
    pub chain: Chain,
    pub keypair_path: PathBuf,
    pub fees: Fees,
    /// The outbox's path, or why the state directory could not be resolved (said only when a
    /// command needs the outbox: reading the chain needs no state).
    outbox_path: Result<PathBuf, String>,
    /// Where progress lines go (the CLI's stderr).
    notice: fn(&str),
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("url", &crate::rpc::redact_url(self.chain.url()))
            .field("keypair_path", &self.keypair_path)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Resolves `flags` against the Solana CLI's config file and defaults. `home` is the
    /// user's home directory (where the Solana CLI keeps its config), `outbox_path` the outbox
    /// file or why there is none.
    pub fn connect(
        flags: Flags<'_>,
        home: Option<&Path>,
        outbox_path: Result<PathBuf, String>,
        notice: fn(&str),
    ) -> Result<Session, SessionError> {
        let config = match (flags.config_file, home) {
            (Some(path), _) => {
                // A config file named on the command line must exist: a typo is not "no config".
                match std::fs::metadata(path) {
                    Err(_) => return Err(SessionError::NoConfigFile(path.to_owned())),
                    Ok(meta) if !meta.is_file() => {
                        return Err(SessionError::ConfigNotAFile(path.to_owned()));
                    }
                    Ok(_) => {}
                }
                SolanaConfig::read(path).map_err(SessionError::Convention)?
            }
            (None, Some(home)) => SolanaConfig::read(&home.join(cli_config::CONFIG_FILE))
                .map_err(SessionError::Convention)?,
            (None, None) => SolanaConfig::default(),
        };
        let resolved =
            cli_config::resolve(flags.url, flags.keypair, flags.commitment, &config, home)
                .map_err(|e| match &e {
                    ConventionError::Url(_) if flags.url.is_none() => SessionError::ConfigUrl(
                        e.to_string().trim_start_matches("--url ").to_owned(),
                    ),
                    _ => SessionError::Convention(e),
                })?;
        Ok(Session {
            chain: Chain::new(&resolved.url, resolved.commitment),
            keypair_path: resolved.keypair_path,
            fees: flags.fees,
            outbox_path,
            notice,
        })
    }

    /// The wallet: the keypair file, read (errors name the file, never its numbers).
    pub fn wallet(&self) -> Result<Keypair, SessionError> {
        cli_config::read_keypair_file(&self.keypair_path).map_err(SessionError::Wallet)
    }

    /// The wallet, for a command that will sign: read, and every transaction an earlier command
    /// left pending on this cluster is first driven to its end (landed, failed or expired), so
    /// that what the command reads next is the chain after it, never a half-known state.
    pub fn signer(&self) -> Result<Keypair, SessionError> {
        let wallet = self.wallet()?;
        let mut outbox = self.outbox()?;
        let notice = self.notice;
        let progress = |line: &str| notice(line);
        let mut sender = Sender::new(&self.chain, &mut outbox, &progress)?;
        for (entry, result) in sender.resume_all()? {
            let ended = match result {
                Ok(Some(_)) => "landed".to_owned(),
                Ok(None) => "expired without landing".to_owned(),
                Err(e) if e.may_still_land() => return Err(e.into()),
                Err(e) => format!("ended: {e}"),
            };
            notice(&format!(
                "an earlier transaction ({}, {}) {ended}",
                entry.intent, entry.signature
            ));
        }
        Ok(wallet)
    }

    /// The outbox, opened (created on first use).
    pub fn outbox(&self) -> Result<Outbox, SessionError> {
        let path = self
            .outbox_path
            .as_ref()
            .map_err(|e| SessionError::StateDir(e.clone()))?;
        Ok(Outbox::open(path)?)
    }

    /// The newest transaction recorded for `intent` on this cluster that landed, if any.
    pub fn landed(&self, intent: &str) -> Result<Option<Entry>, SessionError> {
        let cluster = self.chain.genesis_hash()?;
        let latest = self.outbox()?.latest(&cluster, intent)?;
        Ok(latest.filter(|e| e.state == EntryState::Landed))
    }

    /// Lands `instructions` for `intent`, signed by `wallet`, through the outbox.
    pub fn send(
        &self,
        intent: &str,
        wallet: &Keypair,
        instructions: &[crate::Instruction],
    ) -> Result<Sent, SessionError> {
        let mut outbox = self.outbox()?;
        let notice = self.notice;
        let progress = |line: &str| notice(line);
        let mut sender = Sender::new(&self.chain, &mut outbox, &progress)?;
        Ok(sender.send(intent, wallet, &[], instructions, self.fees)?)
    }
}

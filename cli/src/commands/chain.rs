//! What every on-chain command shares: the Solana CLI's conventions resolved (flag > config.yml >
//! default), the wallet read, the endpoint, the outbox every transaction is written to before it
//! is sent, and how amounts, addresses and failures are shown.

use std::path::PathBuf;

use skilltrial_chain::cli_config::{self, ConventionError, SolanaConfig};
use skilltrial_chain::outbox::Outbox;
use skilltrial_chain::rpc::{Chain, RpcFailure};
use skilltrial_chain::send::{Fees, SendError, Sender, Sent};
use skilltrial_core::money::Lamports;
use solana_keypair::Keypair;

use crate::cli::{Global, SolanaArgs};
use crate::exit::CliError;
use crate::state;

/// A connection to a cluster, with the wallet when the command signs.
pub struct Session {
    pub chain: Chain,
    pub keypair_path: PathBuf,
    pub fees: Fees,
    global_home: Option<PathBuf>,
}

/// The file every signed transaction is written to before it is sent, in the state directory.
pub const OUTBOX_FILE: &str = "chain-outbox.sqlite";

fn convention(e: ConventionError) -> CliError {
    CliError::Environment(anyhow::anyhow!("{e}"))
}

/// Resolves `args` against the Solana CLI's config file and defaults.
pub fn connect(args: &SolanaArgs, global: &Global) -> Result<Session, CliError> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let config = match (&args.config_file, &home) {
        (Some(path), _) => {
            // A config file named on the command line must exist: a typo is not "no config".
            match std::fs::metadata(path) {
                Err(_) => {
                    return Err(CliError::Environment(anyhow::anyhow!(
                        "--config {}: no such file",
                        path.display()
                    )));
                }
                Ok(meta) if !meta.is_file() => {
                    return Err(CliError::Environment(anyhow::anyhow!(
                        "--config {}: not a regular file (a folder, FIFO or device)",
                        path.display()
                    )));
                }
                Ok(_) => {}
            }
            SolanaConfig::read(path).map_err(convention)?
        }
        (None, Some(home)) => {
            SolanaConfig::read(&home.join(cli_config::CONFIG_FILE)).map_err(convention)?
        }
        (None, None) => SolanaConfig::default(),
    };
    let resolved = cli_config::resolve(
        args.url.as_deref(),
        args.keypair.as_deref(),
        args.commitment.as_deref(),
        &config,
        home.as_deref(),
    )
    .map_err(|e| {
        // A value that came from the config file is named with it, not as a flag never typed.
        let from_config = match &e {
            ConventionError::Url(_) => args.url.is_none(),
            _ => false,
        };
        if from_config {
            CliError::Environment(anyhow::anyhow!(
                "the Solana CLI config's json_rpc_url: {}",
                e.to_string().trim_start_matches("--url ")
            ))
        } else {
            CliError::Environment(anyhow::anyhow!("{e}"))
        }
    })?;
    Ok(Session {
        chain: Chain::new(&resolved.url, resolved.commitment),
        keypair_path: resolved.keypair_path,
        fees: Fees {
            price: args.with_compute_unit_price,
            ceiling: args.max_compute_unit_price,
        },
        global_home: global.home.clone(),
    })
}

impl Session {
    /// The wallet: the keypair file, read (errors name the file, never its numbers).
    pub fn wallet(&self) -> Result<Keypair, CliError> {
        cli_config::read_keypair_file(&self.keypair_path).map_err(|e| {
            CliError::Environment(anyhow::anyhow!(
                "{e}. Create one with `solana-keygen new`, or name yours with --keypair"
            ))
        })
    }

    /// The wallet, for a command that will sign: read, and every transaction an earlier command
    /// left pending on this cluster is first driven to its end (landed, failed or expired), so
    /// that what the command reads next is the chain after it, never a half-known state.
    pub fn signer(&self) -> Result<Keypair, CliError> {
        let wallet = self.wallet()?;
        let mut outbox = self.outbox()?;
        let progress = |line: &str| crate::commands::progress::notice(line);
        let mut sender = Sender::new(&self.chain, &mut outbox, &progress).map_err(send_error)?;
        for (entry, result) in sender.resume_all().map_err(send_error)? {
            let ended = match result {
                Ok(Some(_)) => "landed".to_owned(),
                Ok(None) => "expired without landing".to_owned(),
                Err(e) if e.may_still_land() => return Err(send_error(e)),
                Err(e) => format!("ended: {e}"),
            };
            crate::commands::progress::notice(&format!(
                "an earlier transaction ({}, {}) {ended}",
                entry.intent, entry.signature
            ));
        }
        Ok(wallet)
    }

    pub fn outbox(&self) -> Result<Outbox, CliError> {
        let global = Global {
            json: false,
            home: self.global_home.clone(),
        };
        let layout = state::layout(&global)?;
        Outbox::open(&layout.root.join(OUTBOX_FILE))
            .map_err(|e| CliError::Environment(anyhow::anyhow!("{e}")))
    }

    /// The newest transaction recorded for `intent` on this cluster that landed, if any.
    pub fn landed(
        &self,
        intent: &str,
    ) -> Result<Option<skilltrial_chain::outbox::Entry>, CliError> {
        let cluster = self.chain.genesis_hash().map_err(rpc_error)?;
        let latest = self
            .outbox()?
            .latest(&cluster, intent)
            .map_err(|e| CliError::Environment(anyhow::anyhow!("{e}")))?;
        Ok(latest.filter(|e| e.state == skilltrial_chain::outbox::EntryState::Landed))
    }

    /// Lands `instructions` for `intent`, signed by `wallet`, through the outbox.
    pub fn send(
        &self,
        intent: &str,
        wallet: &Keypair,
        instructions: &[skilltrial_chain::Instruction],
    ) -> Result<Sent, CliError> {
        let mut outbox = self.outbox()?;
        let progress = |line: &str| crate::commands::progress::notice(line);
        let mut sender = Sender::new(&self.chain, &mut outbox, &progress).map_err(send_error)?;
        sender
            .send(intent, wallet, &[], instructions, self.fees)
            .map_err(send_error)
    }
}

/// A send failure as the CLI reports it: refused or failed on-chain is an input the cluster
/// judged (exit 1); an unreachable node or an unusable outbox is the environment (exit 2). A
/// failure after the transaction was recorded says that it may still land and how to resume it;
/// one before says nothing was signed.
pub fn send_error(e: SendError) -> CliError {
    match e {
        SendError::Refused(_) | SendError::FailedOnChain { .. } | SendError::Build(_) => {
            CliError::Rejected(anyhow::anyhow!("{}", e.explain()))
        }
        SendError::Rpc(_)
        | SendError::BeforeSigning(_)
        | SendError::Outbox(_)
        | SendError::Expired(_) => CliError::Environment(anyhow::anyhow!("{}", e.explain())),
    }
}

/// An RPC read failure (exit 2: the endpoint, not the input).
pub fn rpc_error(e: RpcFailure) -> CliError {
    match e {
        RpcFailure::NotTheProgramsAccount { .. } => CliError::Rejected(anyhow::anyhow!("{e}")),
        _ => CliError::Environment(anyhow::anyhow!("{e}")),
    }
}

/// Lamports as people read them: `0.0123 SOL (12,300,000 lamports)`.
pub fn sol(lamports: u64) -> String {
    format!("{} ({} lamports)", Lamports(lamports), grouped(lamports))
}

/// `1234567` as `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A unix time as RFC 3339 UTC.
pub fn when(secs: i64) -> String {
    skilltrial_core::time::rfc3339(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_in_sol_and_lamports() {
        assert_eq!(sol(12_300_000), "0.0123 SOL (12,300,000 lamports)");
        assert_eq!(sol(0), "0 SOL (0 lamports)");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(999), "999");
    }
}

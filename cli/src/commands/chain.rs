//! What every on-chain command shares: the Solana CLI's conventions resolved (flag > config.yml >
//! default), the wallet read, the endpoint, the outbox every transaction is written to before it
//! is sent, and how amounts, addresses and failures are shown.

use std::path::PathBuf;

use skilltrial_chain::Pubkey;
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
            if !path.is_file() {
                return Err(CliError::Environment(anyhow::anyhow!(
                    "--config {}: no such file",
                    path.display()
                )));
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
    .map_err(|e| CliError::Rejected(anyhow::anyhow!("{e}")))?;
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

    /// Lands `instructions` for `intent`, signed by `wallet`, through the outbox.
    pub fn send(
        &self,
        intent: &str,
        wallet: &Keypair,
        instructions: &[skilltrial_chain::Instruction],
    ) -> Result<Sent, CliError> {
        let global = Global {
            json: false,
            home: self.global_home.clone(),
        };
        let layout = state::layout(&global)?;
        let mut outbox = Outbox::open(&layout.root.join(OUTBOX_FILE))
            .map_err(|e| CliError::Environment(anyhow::anyhow!("{e}")))?;
        let progress = |line: &str| crate::commands::progress::notice(line);
        let mut sender = Sender::new(&self.chain, &mut outbox, &progress).map_err(send_error)?;
        sender
            .send(intent, wallet, &[], instructions, self.fees)
            .map_err(send_error)
    }
}

/// A send failure as the CLI reports it: refused or failed on-chain is an input the cluster
/// judged (exit 1); an unreachable node or an unusable outbox is the environment (exit 2), and
/// says that the transaction may still land and how to resume it.
pub fn send_error(e: SendError) -> CliError {
    match e {
        SendError::Refused(_) | SendError::FailedOnChain { .. } | SendError::Build(_) => {
            CliError::Rejected(anyhow::anyhow!("{e}"))
        }
        SendError::Rpc(_) => CliError::Environment(anyhow::anyhow!(
            "{e}. A transaction may have been sent and may still land: run the same command again to resume it (it is never signed twice while it can land)"
        )),
        SendError::Outbox(_) | SendError::Expired(_) => {
            CliError::Environment(anyhow::anyhow!("{e}"))
        }
    }
}

/// An RPC read failure (exit 2: the endpoint, not the input).
pub fn rpc_error(e: RpcFailure) -> CliError {
    match e {
        RpcFailure::NotTheProgramsAccount { .. } => CliError::Rejected(anyhow::anyhow!("{e}")),
        _ => CliError::Environment(anyhow::anyhow!("{e}")),
    }
}

/// An address given as `flag`'s value.
pub fn address(flag: &str, text: &str) -> Result<Pubkey, CliError> {
    let bytes = bs58::decode(text.trim()).into_vec().map_err(|_| {
        CliError::Rejected(anyhow::anyhow!("{flag} {text:?}: not a base58 address"))
    })?;
    let array: [u8; 32] = bytes.try_into().map_err(|bytes: Vec<u8>| {
        CliError::Rejected(anyhow::anyhow!(
            "{flag} {text:?}: decodes to {} bytes, an address has 32",
            bytes.len()
        ))
    })?;
    Ok(Pubkey::new_from_array(array))
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

/// Parses `90s`, `30m`, `24h`, `7d` (or plain seconds) into seconds.
pub fn parse_duration(flag: &str, text: &str) -> Result<i64, CliError> {
    let refused = || {
        CliError::Rejected(anyhow::anyhow!(
            "{flag} {text:?}: not a duration (e.g. 90s, 30m, 24h, 7d)"
        ))
    };
    let trimmed = text.trim();
    let (number, unit) = match trimmed.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => trimmed.split_at(i),
        None => (trimmed, "s"),
    };
    let n: i64 = number.parse().map_err(|_| refused())?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(refused()),
    };
    n.checked_mul(scale).ok_or_else(refused)
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

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("--deadline", "90s").unwrap(), 90);
        assert_eq!(parse_duration("--deadline", "24h").unwrap(), 86_400);
        assert_eq!(parse_duration("--deadline", "7d").unwrap(), 604_800);
        assert_eq!(parse_duration("--deadline", "15").unwrap(), 15);
        for bad in ["", "h", "-5m", "5w", "1.5h", "99999999999999999999d"] {
            assert!(parse_duration("--deadline", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses_are_checked() {
        assert!(address("--runner", "11111111111111111111111111111111").is_ok());
        let e = address("--runner", "not-an-address!")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--runner") && e.contains("base58"), "{e}");
        let e = address("--runner", "abc").unwrap_err().to_string();
        assert!(e.contains("bytes"), "{e}");
    }
}

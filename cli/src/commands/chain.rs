//! What every on-chain command shares: its session with the cluster (`skilltrial_chain::session`,
//! opened from the Solana CLI's flags and the state directory) and how amounts and times are
//! shown.

use std::path::PathBuf;

use skilltrial_chain::session::Flags;
pub use skilltrial_chain::session::{OUTBOX_FILE, Session};
use skilltrial_core::money::Lamports;

use crate::cli::{Global, SolanaArgs};
use crate::exit::CliError;
use crate::state;

/// Opens a session with the cluster `args` and the Solana CLI's config name; the outbox lives
/// in the state directory.
pub fn connect(args: &SolanaArgs, global: &Global) -> Result<Session, CliError> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let flags = Flags {
        url: args.url.as_deref(),
        keypair: args.keypair.as_deref(),
        commitment: args.commitment.as_deref(),
        config_file: args.config_file.as_deref(),
        fees: skilltrial_chain::send::Fees {
            price: args.with_compute_unit_price,
            ceiling: args.max_compute_unit_price,
        },
    };
    let outbox = state::layout(global)
        .map(|layout| layout.root.join(OUTBOX_FILE))
        .map_err(|e| e.to_string());
    Ok(Session::connect(
        flags,
        home.as_deref(),
        outbox,
        crate::commands::progress::notice,
    )?)
}

/// Lamports as people read them: `0.0123 SOL (12,300,000 lamports)`.
pub fn sol(lamports: u64) -> String {
    Lamports(lamports).counted()
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
        assert_eq!(skilltrial_core::money::grouped(1_000), "1,000");
        assert_eq!(skilltrial_core::money::grouped(999), "999");
    }
}

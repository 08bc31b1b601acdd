//! `skilltrial localnet`: see localnet_impl (built with the `localnet` feature).

use crate::cli::{Global, LocalnetArgs};
use crate::exit::{CliError, Status};

#[cfg(not(feature = "localnet"))]
pub fn run(_args: &LocalnetArgs, _global: &Global) -> Result<Status, CliError> {
    Err(CliError::Environment(anyhow::anyhow!(
        "this skilltrial was built without the local validator (it takes a long first build); build it with `cargo build --release --locked -p skilltrial-cli --features localnet`, or run `bash scripts/localnet.sh`"
    )))
}

#[cfg(feature = "localnet")]
pub fn run(args: &LocalnetArgs, global: &Global) -> Result<Status, CliError> {
    super::localnet_impl::run(args, global)
}

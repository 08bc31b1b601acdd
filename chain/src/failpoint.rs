//! Named points where a test stops a process cold, to kill it there (`SIGKILL`) and prove what
//! a restart or another worker makes of the state left behind. Set
//! `SKILLTRIAL_FAILPOINT=<name>[:<subject prefix>]` in a process's environment: when it reaches
//! that point (for a subject starting with the prefix) it writes `failpoint <name> reached` on
//! stderr and waits there for ever. Unset — always, outside tests — a point costs one
//! environment read. The points:
//!
//! - `tx-signed`: the chain client has signed a transaction and stored it in its outbox, and has
//!   not sent it yet (subject: the intent, e.g. `settle:`);
//! - `tx-sent`: it has sent the stored transaction once and not yet seen it land (subject: the
//!   intent, a space and the signature);
//! - `batch-recorded`: the runner has recorded a settlement batch and not yet signed its
//!   transaction (subject: the run's address).

/// The environment variable that arms a point.
pub const VAR: &str = "SKILLTRIAL_FAILPOINT";

/// Stops here for ever when `SKILLTRIAL_FAILPOINT` names `point` for `subject`.
pub fn hit(point: &str, subject: &str) {
    let Ok(armed) = std::env::var(VAR) else {
        return;
    };
    let (name, prefix) = armed.split_once(':').unwrap_or((armed.as_str(), ""));
    if name != point || !subject.starts_with(prefix) {
        return;
    }
    #[allow(clippy::print_stderr)]
    {
        eprintln!("failpoint {point} reached ({subject})");
    }
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

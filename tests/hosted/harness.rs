//! The local validator (the real `skilltrial localnet`), the binary as a user runs it, and the
//! runner played through the chain client.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use skilltrial_chain::Pubkey;
use skilltrial_chain::cli_config::{self, Commitment};
use skilltrial_chain::outbox::Outbox;
use skilltrial_chain::rpc::Chain;
use skilltrial_chain::send::{Fees, Sender, Sent};
use skilltrial_engine::scripted::{Reply, ScriptedServer};
use solana_keypair::Keypair;
use solana_signature::Signature;
use solana_signer::Signer;

/// The running validator and everything the scenarios share.
pub struct Localnet {
    child: Child,
    pub dir: tempfile::TempDir,
    pub url: String,
    pub user_keypair: PathBuf,
    pub other_keypair: PathBuf,
    pub runner: Keypair,
    /// The runner's keypair file (in the ledger), for the daemon.
    pub runner_keypair: PathBuf,
    pub payout: Pubkey,
    /// The line `skilltrial localnet --json` printed when ready.
    pub info: Value,
    pub chain: Chain,
    /// A loopback model server (Anthropic wire format) the local runs are executed against.
    pub server: ScriptedServer,
    /// What each command's transaction cost: (command, fee lamports, compute units).
    costs: std::cell::RefCell<Vec<(String, u64, u64)>>,
}

/// Two free loopback ports in a row (RPC and its websocket).
fn free_port_pair() -> u16 {
    for _ in 0..100 {
        let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        if port < 65_000 && std::net::TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
    panic!("no two free loopback ports in a row");
}

impl Localnet {
    /// A validator with the program's config initialized by `localnet`.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// A validator started with `extra` flags (`--no-init`: no config).
    pub fn start_with(extra: &[&str]) -> Self {
        let started = std::time::Instant::now();
        let net = Self::launch(extra, false);
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "local validator ready in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        net
    }

    /// As [`Self::start_with`], with `localnet`'s stderr in a file ([`Self::stderr`]) instead
    /// of the test's.
    pub fn start_logged(extra: &[&str]) -> Self {
        Self::launch(extra, true)
    }

    /// What `localnet` wrote on stderr (started by [`Self::start_logged`]).
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("localnet.stderr")).unwrap_or_default()
    }

    fn launch(extra: &[&str], logged: bool) -> Self {
        let bin = skilltrial_e2e::skilltrial_bin().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let stderr = if logged {
            Stdio::from(std::fs::File::create(dir.path().join("localnet.stderr")).unwrap())
        } else {
            Stdio::inherit()
        };
        let user_keypair = dir.path().join("user.json");
        let other_keypair = dir.path().join("other.json");
        let port = free_port_pair();
        let mut child = Command::new(&bin)
            .args(["--json", "--home"])
            .arg(dir.path().join("home"))
            .args(["localnet", "--ledger"])
            .arg(dir.path().join("ledger"))
            .args(["--rpc-port", &port.to_string(), "--keypair"])
            .arg(&user_keypair)
            .args(["--min-deadline-secs", "10"])
            .args(extra)
            .current_dir(skilltrial_e2e::workspace_root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let info: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
            let _ = child.kill();
            panic!("`skilltrial localnet --json` printed {line:?}: {e}")
        });
        assert_eq!(
            info["config_initialized_now"],
            !extra.contains(&"--no-init"),
            "{info}"
        );
        let url = info["rpc_url"].as_str().unwrap().to_owned();
        let runner_keypair = PathBuf::from(info["runner_keypair"].as_str().unwrap());
        let runner = cli_config::read_keypair_file(&runner_keypair).unwrap();
        let payout: Pubkey = info["runner_payout"].as_str().unwrap().parse().unwrap();
        assert!(
            user_keypair.is_file(),
            "localnet creates the missing keypair"
        );
        let other = Keypair::new();
        solana_keypair::write_keypair_file(&other, &other_keypair).unwrap();
        let server = ScriptedServer::start(|_| Reply::Answer("I do not know.".to_owned())).unwrap();
        std::fs::write(
            dir.path().join("profiles.toml"),
            format!(
                "[[profile]]\nid = \"loopback\"\nprovider = \"anthropic\"\nmodel = \"loopback-model\"\nbase_url = \"{}\"\ncontext_tokens = 200000\nmax_output_tokens = 1024\ninput_usd_per_mtok = \"3\"\noutput_usd_per_mtok = \"15\"\nprice_source = \"test\"\nprice_as_of = \"2026-11-30\"\n",
                server.url()
            ),
        )
        .unwrap();
        let net = Self {
            child,
            chain: Chain::new(&url, Commitment::Confirmed),
            dir,
            url,
            user_keypair,
            other_keypair,
            runner,
            runner_keypair,
            payout,
            info,
            server,
            costs: std::cell::RefCell::new(Vec::new()),
        };
        // The other wallet gets 5 SOL from the user, by a plain system transfer (the send
        // path of the chain client, on a cluster with or without the program's config).
        let user = net.user();
        net.send_as(
            &user,
            "fund other",
            &[system_transfer(
                &user.pubkey(),
                &net.other().pubkey(),
                5_000_000_000,
            )],
        )
        .unwrap();
        net
    }

    /// The `skilltrial localnet` process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn user(&self) -> Keypair {
        cli_config::read_keypair_file(&self.user_keypair).unwrap()
    }

    pub fn other(&self) -> Keypair {
        cli_config::read_keypair_file(&self.other_keypair).unwrap()
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// The binary with `args`, run as the user (`--url` and `--keypair` given) in the test's
    /// state directory.
    pub fn command(&self, keypair: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(skilltrial_e2e::skilltrial_bin().unwrap());
        cmd.args(args)
            .arg("--home")
            .arg(self.home())
            .args(["--url", &self.url, "--keypair"])
            .arg(keypair)
            .current_dir(skilltrial_e2e::workspace_root())
            .env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
            .env_remove("ANTHROPIC_BASE_URL")
            .env("HOME", self.dir.path())
            .stdin(Stdio::null());
        cmd
    }

    /// The binary without the chain flags (local commands: plan, run, report).
    pub fn local(&self, args: &[&str]) -> Output {
        Command::new(skilltrial_e2e::skilltrial_bin().unwrap())
            .args(args)
            .arg("--home")
            .arg(self.home())
            .current_dir(skilltrial_e2e::workspace_root())
            .env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
            .env_remove("ANTHROPIC_BASE_URL")
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Runs as `keypair`; the output, whatever the exit.
    pub fn cli(&self, keypair: &Path, args: &[&str]) -> Output {
        self.command(keypair, args).output().unwrap()
    }

    /// Runs as `keypair` with `--json`; must succeed.
    pub fn cli_json(&self, keypair: &Path, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.cli(keypair, &all);
        assert!(
            out.status.success(),
            "{args:?} failed ({:?}):\n{}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Sends `instructions` paid and signed by `signer` through a chain client and outbox of the
    /// test's own (as the runner daemon will).
    pub fn send_as(
        &self,
        signer: &Keypair,
        intent: &str,
        instructions: &[skilltrial_chain::Instruction],
    ) -> Result<Sent, skilltrial_chain::send::SendError> {
        let mut outbox = Outbox::open(&self.dir.path().join("runner-outbox.sqlite")).unwrap();
        let progress = |_: &str| {};
        let mut sender = Sender::new(&self.chain, &mut outbox, &progress)?;
        sender.send(intent, signer, &[], instructions, Fees::default())
    }

    pub fn balance(&self, key: &Pubkey) -> u64 {
        self.chain.balance(key).unwrap()
    }

    /// A landed transaction as `getTransaction` answers it (confirmed).
    pub fn transaction(&self, signature: &str) -> Value {
        let signature: Signature = signature.parse().unwrap();
        let started = Instant::now();
        loop {
            if let Some(tx) = self
                .chain
                .transaction(&signature, Commitment::Confirmed)
                .unwrap()
            {
                return tx;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "getTransaction {signature}: still null after 120 s; its status: {:?}",
                self.chain.signature_status(&signature)
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// The fee a landed transaction paid (its own `meta.fee`).
    pub fn fee_of(&self, signature: &str) -> u64 {
        self.transaction(signature)["meta"]["fee"].as_u64().unwrap()
    }

    /// Records what `command`'s transaction cost (fee and compute units), for the cost table
    /// the test prints; returns the fee.
    pub fn cost(&self, command: &str, signature: &str) -> u64 {
        let tx = self.transaction(signature);
        let fee = tx["meta"]["fee"].as_u64().unwrap();
        let units = tx["meta"]["computeUnitsConsumed"].as_u64().unwrap_or(0);
        self.costs
            .borrow_mut()
            .push((command.to_owned(), fee, units));
        fee
    }

    /// The cost table (with `--nocapture`).
    #[allow(clippy::print_stdout)]
    pub fn print_costs(&self) {
        for (command, fee, units) in self.costs.borrow().iter() {
            println!("hosted cost: {command:<40} fee {fee:>6} lamports  {units:>7} CU");
        }
    }

    /// Stops the validator as a person does (Ctrl-C): it must exit 0.
    pub fn stop(mut self) {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY-free: the `kill` command delivers SIGINT to our own child.
        let status = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "localnet exited with {status} on Ctrl-C");
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "localnet did not stop within 60 s of Ctrl-C"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Localnet {
    /// How `localnet` exited, waiting up to `limit` for it; `None` while it still runs.
    pub fn exited_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if started.elapsed() >= limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// After a scenario failed: whether `skilltrial localnet` has exited on its own (it does
    /// when a validator thread panics, or after 30 s without a new slot), waiting up to 45 s
    /// for it to notice. `Some(exit status)` when it exited, `None` while the validator still runs.
    pub fn validator_died(&mut self) -> Option<std::process::ExitStatus> {
        self.exited_within(Duration::from_secs(45))
    }
}

impl Drop for Localnet {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A System program transfer (instruction 2: u32 index, u64 lamports, little-endian).
pub fn system_transfer(from: &Pubkey, to: &Pubkey, lamports: u64) -> skilltrial_chain::Instruction {
    let mut data = 2u32.to_le_bytes().to_vec();
    data.extend_from_slice(&lamports.to_le_bytes());
    skilltrial_chain::Instruction {
        program_id: skilltrial_chain::SYSTEM_PROGRAM_ID,
        accounts: vec![
            skilltrial_chain::AccountMeta::new(*from, true),
            skilltrial_chain::AccountMeta::new(*to, false),
        ],
        data,
    }
}

/// stdout and stderr of an output, for messages.
pub fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

//! `skilltrial pack add-task`: a task of one's own pack from one's own chain data, fetched once
//! at `finalized` (built with the `chain` feature; core::pack::author makes the task).

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_chain::cli_config::Commitment;
use skilltrial_chain::rpc::{Chain, redact_url};
use skilltrial_core::pack::{self, author};

use crate::cli::{Global, PackAddTaskArgs};
use crate::commands::pack_author::{environment, refused, write};
use crate::exit::{CliError, Status};
use crate::output;

/// `pack add-task --json`: the task added.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskAdded {
    /// The task id.
    pub task: String,
    pub family: skilltrial_core::checker::Family,
    /// The network its data came from (`--network`, else named by the cluster's genesis hash).
    pub network: String,
    /// How many known-wrong answers it carries, each with the checker's exact verdict.
    pub known_wrong: usize,
    /// The task's folder.
    pub dir: String,
    /// The pack's content hash now (seal it with `pack build`).
    pub pack_hash: String,
}

/// The network a genesis hash names.
fn network_of(genesis: &str) -> &'static str {
    match genesis {
        "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d" => "mainnet",
        "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG" => "devnet",
        "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY" => "testnet",
        _ => "localnet",
    }
}

fn address(flag: &str, text: &str) -> Result<skilltrial_chain::Pubkey, CliError> {
    text.parse().map_err(|_| {
        CliError::Environment(anyhow::anyhow!(
            "{flag} {text}: not a base58 Solana address"
        ))
    })
}

/// A default task id from a kind and an address or signature: `acct-epjfwdd5`.
fn default_id(kind: &str, key: &str) -> String {
    let short: String = key.chars().take(8).collect::<String>().to_lowercase();
    format!("{kind}-{short}")
}

pub fn run(args: &PackAddTaskArgs, global: &Global) -> Result<Status, CliError> {
    let dir = &args.dir;
    let meta_path = dir.join("pack.json");
    if !meta_path.is_file() {
        return Err(environment(format!(
            "{} has no pack.json: make the pack first with `skilltrial pack new {}`",
            dir.display(),
            dir.display()
        )));
    }
    // The pack must open as it is before anything is fetched.
    pack::open_folder(dir).map_err(CliError::from)?;

    let chain = Chain::new(&args.url, Commitment::Finalized);
    let rpc = redact_url(&args.url);
    let fetch_error = |e: skilltrial_chain::rpc::RpcFailure| environment(e.to_string());
    let network = match &args.network {
        Some(n) => {
            author::check_name("--network", n).map_err(refused)?;
            n.clone()
        }
        None => network_of(&chain.genesis_hash().map_err(fetch_error)?).to_owned(),
    };
    let source = |call: String| author::Source {
        rpc: rpc.clone(),
        call,
        commitment: "finalized".to_owned(),
        fetched_at: skilltrial_core::time::rfc3339(skilltrial_engine::journal::now_ms() / 1000),
    };
    let fetch_account = |flag: &str, text: &str| {
        let key = address(flag, text)?;
        let fetched = chain
            .account_at(&key)
            .map_err(fetch_error)?
            .ok_or_else(|| {
                refused(format!(
                    "{flag} {text}: no such account at finalized commitment on {rpc}"
                ))
            })?;
        let slot = fetched.slot.ok_or_else(|| {
            environment(format!(
                "{rpc} did not say at which slot it read {text}: not a Solana JSON-RPC node?"
            ))
        })?;
        Ok::<_, CliError>((fetched, slot))
    };
    let task = if let Some(text) = &args.account {
        let (fetched, slot) = fetch_account("--account", text)?;
        let id = args.id.clone().unwrap_or_else(|| default_id("acct", text));
        let owner = fetched.owner.to_string();
        author::account_task(
            &id,
            &network,
            &author::Account {
                address: text,
                owner: &owner,
                lamports: fetched.lamports,
                data: &fetched.data,
                slot,
            },
            &source(format!("getAccountInfo({text}, {{encoding: \"base64\"}})")),
        )
    } else if let Some(text) = &args.transaction {
        let signature: solana_signature::Signature = text.parse().map_err(|_| {
            environment(format!("--transaction {text}: not a base58 transaction signature"))
        })?;
        let result = chain
            .transaction(&signature, Commitment::Finalized)
            .map_err(fetch_error)?
            .ok_or_else(|| {
                refused(format!(
                    "--transaction {text}: {rpc} has no such transaction at finalized commitment (too recent, or pruned: try an archive node)"
                ))
            })?;
        let id = args.id.clone().unwrap_or_else(|| default_id("tx", text));
        author::transaction_task(
            &id,
            &network,
            text,
            &result,
            &source(format!(
                "getTransaction({text}, {{encoding: \"base64\", maxSupportedTransactionVersion: 0}})"
            )),
        )
    } else {
        let need = |flag: &str, v: &Option<String>| {
            v.clone()
                .ok_or_else(|| environment(format!("--transfer needs {flag}")))
        };
        let mint = need("--mint", &args.mint)?;
        let from = need("--from", &args.from)?;
        let to = need("--to", &args.to)?;
        let amount = need("--amount", &args.amount)?;
        address("--from", &from)?;
        address("--to", &to)?;
        let (fetched, slot) = fetch_account("--mint", &mint)?;
        let epoch = chain.epoch().map_err(fetch_error)?;
        let id = args.id.clone().unwrap_or_else(|| default_id("plan", &mint));
        let owner = fetched.owner.to_string();
        author::transfer_task(
            &id,
            &network,
            &author::Transfer {
                mint: &mint,
                mint_owner: &owner,
                mint_data: &fetched.data,
                slot,
                epoch,
                sender_owner: &from,
                recipient_owner: &to,
                amount: &amount,
                memo: args.memo.as_deref(),
            },
            &source(format!("getAccountInfo({mint}, {{encoding: \"base64\"}}); getEpochInfo")),
        )
    }
    .map_err(refused)?;

    // One add-task at a time per pack: the folder itself is locked (a lock file inside would
    // change the pack's hash), and pack.json is read again under the lock.
    let lock = std::fs::File::open(dir)
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|e| environment(format!("cannot lock {}: {e}", dir.display())))?;
    let meta = std::fs::read(&meta_path)
        .map_err(|e| environment(format!("cannot read {}: {e}", meta_path.display())))?;
    // The task's folder is written whole under a temporary name and renamed into place; the
    // pack lists it only after that, so an interrupted add-task never leaves a listed half task.
    // A temporary folder left by one that was killed is removed first (the lock says no other
    // add-task is running).
    let tasks = dir.join("tasks");
    if let Ok(entries) = std::fs::read_dir(&tasks) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(".tmp-") {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let target = tasks.join(&task.id);
    if target.exists() {
        return Err(refused(format!(
            "{} already exists: a task is immutable; give the new one another --id",
            target.display()
        )));
    }
    let updated = author::add_to_pack_json(&meta, &task.id).map_err(refused)?;
    let staging = tasks.join(format!(".tmp-{}-{}", task.id, std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    for (name, bytes) in &task.files {
        write(&staging.join(name), bytes)?;
    }
    std::fs::rename(&staging, &target).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staging);
        environment(format!(
            "cannot move the task into {}: {e}",
            target.display()
        ))
    })?;
    write(&meta_path, &updated)?;
    drop(lock);
    let opened = pack::open_folder(dir).map_err(CliError::from)?;
    if global.json {
        output::json(&TaskAdded {
            task: task.id.clone(),
            family: task.family,
            network: network.clone(),
            known_wrong: task.known_wrong,
            dir: target.display().to_string(),
            pack_hash: opened.hash.to_string(),
        })?;
    } else {
        output::text(&format!(
            "added {} [{}] ({network}) with {} known-wrong answers to {}\npack hash now {}; seal it with `skilltrial pack build {}`\n",
            task.id,
            task.family.as_str(),
            task.known_wrong,
            opened.id(),
            opened.hash,
            dir.display()
        ))?;
    }
    Ok(Status::Ok)
}

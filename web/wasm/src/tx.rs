//! The page's transactions, built from the committed IDL (`idl/skilltrial.json`): `run_open`,
//! `run_cancel`, and the anchor memo. The page hands the message bytes to the wallet, which signs
//! them; nothing here holds a key.
//!
//! Legacy messages, compiled as Solana's own `Message::new` compiles them (the tests compare the
//! bytes with `solana-message` on the program crate's instructions): the payer first, then the
//! writable signers, the read-only signers, the writable and the read-only others, each group in
//! key order; a program is a read-only non-signer.

use std::collections::BTreeMap;

use serde_json::Value;
use skilltrial_core::solana::Address;
use skilltrial_core::solana::pda::find_program_address;

/// The IDL the program's client code is generated from (committed; CI checks it is current).
const IDL: &str = include_str!("../../../idl/skilltrial.json");
/// SPL Memo v3: where anchors are sent (`skilltrial anchor` sends to the same).
pub const MEMO_PROGRAM: &str = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
const SYSTEM_PROGRAM: [u8; 32] = [0; 32];
/// The anchor memo's version tag (`st1:<manifest>:<report>`, chain/src/anchor.rs).
const ANCHOR_TAG: &str = "st1";

/// One account of an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub key: [u8; 32],
    pub signer: bool,
    pub writable: bool,
}

/// One instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ix {
    pub program: [u8; 32],
    pub accounts: Vec<Meta>,
    pub data: Vec<u8>,
}

/// What the IDL says of the program: its id, the two fixed accounts, the discriminators.
#[derive(Debug, Clone)]
pub struct Idl {
    pub program: Address,
    pub config: Address,
    pub fee_vault: Address,
    run_open: [u8; 8],
    run_cancel: [u8; 8],
    run_close: [u8; 8],
}

impl Idl {
    /// The committed IDL, read.
    pub fn committed() -> Result<Self, String> {
        let doc: Value =
            serde_json::from_str(IDL).map_err(|e| format!("the embedded IDL is not JSON: {e}"))?;
        let address = |v: &Value, what: &str| -> Result<Address, String> {
            v.as_str()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("the embedded IDL has no address for {what}"))
        };
        let instruction = |name: &str| -> Result<&Value, String> {
            doc["instructions"]
                .as_array()
                .and_then(|all| all.iter().find(|i| i["name"] == name))
                .ok_or_else(|| format!("the embedded IDL has no instruction {name}"))
        };
        let discriminator = |name: &str| -> Result<[u8; 8], String> {
            let bytes: Vec<u8> = instruction(name)?["discriminator"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                        .collect()
                })
                .unwrap_or_default();
            bytes
                .try_into()
                .map_err(|_| format!("the embedded IDL's {name} discriminator is not 8 bytes"))
        };
        let account = |ix: &str, name: &str| -> Result<Address, String> {
            let found = instruction(ix)?["accounts"]
                .as_array()
                .and_then(|a| a.iter().find(|x| x["name"] == name))
                .ok_or_else(|| format!("the embedded IDL's {ix} has no account {name}"))?;
            address(&found["address"], name)
        };
        Ok(Self {
            program: address(&doc["address"], "the program")?,
            config: account("run_open", "config")?,
            fee_vault: account("run_open", "fee_vault")?,
            run_open: discriminator("run_open")?,
            run_cancel: discriminator("run_cancel")?,
            run_close: discriminator("run_close")?,
        })
    }

    /// The Run account of `user`'s run of `manifest_hash` (`[b"run", user, hash]`).
    pub fn run_address(&self, user: &Address, manifest_hash: &[u8; 32]) -> Result<Address, String> {
        find_program_address(&[b"run", user.bytes(), manifest_hash], &self.program)
            .map(|(address, _)| address)
            .ok_or_else(|| "no Run address exists for this wallet and manifest".to_owned())
    }

    /// `run_open`, with `RunOpenArgs` in Borsh: the hash, trials (u16), cap, escrow (u64),
    /// deadline (i64), the fee and runner the user agreed to.
    pub fn run_open(&self, user: &Address, args: &RunOpen) -> Result<Ix, String> {
        let run = self.run_address(user, &args.manifest_hash)?;
        let mut data = Vec::with_capacity(8 + 32 + 2 + 8 * 4 + 32);
        data.extend_from_slice(&self.run_open);
        data.extend_from_slice(&args.manifest_hash);
        data.extend_from_slice(&args.planned_trials.to_le_bytes());
        data.extend_from_slice(&args.per_request_cap.to_le_bytes());
        data.extend_from_slice(&args.escrow.to_le_bytes());
        data.extend_from_slice(&args.deadline.to_le_bytes());
        data.extend_from_slice(&args.fee_per_trial.to_le_bytes());
        data.extend_from_slice(args.runner.bytes());
        Ok(Ix {
            program: self.program.0,
            accounts: vec![
                meta(user, true, true),
                meta(&self.config, false, false),
                meta(&self.fee_vault, false, true),
                meta(&run, false, true),
                Meta {
                    key: SYSTEM_PROGRAM,
                    signer: false,
                    writable: false,
                },
            ],
            data,
        })
    }

    /// `run_cancel`: the run's user signs; no arguments.
    pub fn run_cancel(&self, user: &Address, run: &Address) -> Ix {
        Ix {
            program: self.program.0,
            accounts: vec![meta(user, true, false), meta(run, false, true)],
            data: self.run_cancel.to_vec(),
        }
    }

    /// `run_close`: a finalized run's remainder and rent back to its user, who signs.
    pub fn run_close(&self, user: &Address, run: &Address) -> Ix {
        Ix {
            program: self.program.0,
            accounts: vec![meta(user, true, true), meta(run, false, true)],
            data: self.run_close.to_vec(),
        }
    }
}

/// `run_open`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOpen {
    pub manifest_hash: [u8; 32],
    pub planned_trials: u16,
    pub per_request_cap: u64,
    pub escrow: u64,
    pub deadline: i64,
    pub fee_per_trial: u64,
    pub runner: Address,
}

fn meta(key: &Address, signer: bool, writable: bool) -> Meta {
    Meta {
        key: key.0,
        signer,
        writable,
    }
}

/// The anchor memo `st1:<manifest>:<report>` (hashes in base58), signed by `signer`.
pub fn anchor_memo(signer: &Address, manifest_hash: &[u8; 32], report_hash: &[u8; 32]) -> Ix {
    let text = format!(
        "{ANCHOR_TAG}:{}:{}",
        bs58::encode(manifest_hash).into_string(),
        bs58::encode(report_hash).into_string()
    );
    Ix {
        program: Address::from_static(MEMO_PROGRAM).0,
        accounts: vec![meta(signer, true, false)],
        data: text.into_bytes(),
    }
}

fn short_vec(out: &mut Vec<u8>, len: usize) -> Result<(), String> {
    let mut rest =
        u16::try_from(len).map_err(|_| format!("{len} items do not fit a transaction"))?;
    loop {
        let low = u8::try_from(rest & 0x7f).unwrap_or(0);
        rest >>= 7;
        if rest == 0 {
            out.push(low);
            return Ok(());
        }
        out.push(low | 0x80);
    }
}

/// The legacy message of `instructions`, paid by `payer`, at `blockhash`.
pub fn legacy_message(
    payer: &Address,
    instructions: &[Ix],
    blockhash: &[u8; 32],
) -> Result<Vec<u8>, String> {
    // key → (signer, writable); the payer signs and is written.
    let mut keys: BTreeMap<[u8; 32], (bool, bool)> = BTreeMap::new();
    keys.insert(payer.0, (true, true));
    for ix in instructions {
        keys.entry(ix.program).or_insert((false, false));
        for m in &ix.accounts {
            let entry = keys.entry(m.key).or_insert((false, false));
            entry.0 |= m.signer;
            entry.1 |= m.writable;
        }
    }
    let group = |signer: bool, writable: bool| {
        keys.iter()
            .filter(move |(k, flags)| **k != payer.0 && **flags == (signer, writable))
            .map(|(k, _)| *k)
    };
    let mut order = vec![payer.0];
    order.extend(group(true, true));
    let readonly_signed = group(true, false).count();
    order.extend(group(true, false));
    order.extend(group(false, true));
    let readonly_unsigned = group(false, false).count();
    order.extend(group(false, false));
    let signers = 1 + group(true, true).count() + readonly_signed;
    let byte = |n: usize| u8::try_from(n).map_err(|_| format!("{n} accounts are too many"));
    let index = |key: &[u8; 32]| -> Result<u8, String> {
        order
            .iter()
            .position(|k| k == key)
            .ok_or_else(|| "an account is missing from the message".to_owned())
            .and_then(byte)
    };

    let mut out = vec![
        byte(signers)?,
        byte(readonly_signed)?,
        byte(readonly_unsigned)?,
    ];
    short_vec(&mut out, order.len())?;
    for key in &order {
        out.extend_from_slice(key);
    }
    out.extend_from_slice(blockhash);
    short_vec(&mut out, instructions.len())?;
    for ix in instructions {
        out.push(index(&ix.program)?);
        short_vec(&mut out, ix.accounts.len())?;
        for m in &ix.accounts {
            out.push(index(&m.key)?);
        }
        short_vec(&mut out, ix.data.len())?;
        out.extend_from_slice(&ix.data);
    }
    Ok(out)
}

/// A transaction of `message` with one signature slot per signer, all zero, for the wallet to
/// fill (the Wallet Standard signs whole transactions).
pub fn unsigned_transaction(message: &[u8]) -> Result<Vec<u8>, String> {
    let signers = usize::from(*message.first().ok_or("an empty message")?);
    let mut out = Vec::with_capacity(1 + 64 * signers + message.len());
    short_vec(&mut out, signers)?;
    out.resize(out.len() + 64 * signers, 0);
    out.extend_from_slice(message);
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use skilltrial_chain::{Pubkey, ix, pda};
    use solana_message::{Hash, Message};
    use solana_transaction_serde::Transaction;

    fn pubkey(a: &Address) -> Pubkey {
        Pubkey::new_from_array(a.0)
    }

    /// The unsigned transaction Solana's own code builds of `ix` paid by `payer`.
    fn solana_bytes(
        payer: &Pubkey,
        ix: skilltrial_chain::Instruction,
        blockhash: [u8; 32],
    ) -> Vec<u8> {
        let message =
            Message::new_with_blockhash(&[ix], Some(payer), &Hash::new_from_array(blockhash));
        bincode::serialize(&Transaction::new_unsigned(message)).unwrap()
    }

    fn ours(payer: &Address, ix: Ix, blockhash: [u8; 32]) -> Vec<u8> {
        unsigned_transaction(&legacy_message(payer, &[ix], &blockhash).unwrap()).unwrap()
    }

    #[test]
    fn the_idl_names_the_program_and_accounts_the_chain_crate_derives() {
        let idl = Idl::committed().unwrap();
        assert_eq!(pubkey(&idl.program), skilltrial_chain::PROGRAM_ID);
        assert_eq!(pubkey(&idl.config), pda::config());
        assert_eq!(pubkey(&idl.fee_vault), pda::fee_vault());
        let user = Address([7; 32]);
        let hash = [9u8; 32];
        assert_eq!(
            pubkey(&idl.run_address(&user, &hash).unwrap()),
            pda::run(&pubkey(&user), &hash)
        );
        assert_eq!(
            Address::from_static(MEMO_PROGRAM).0,
            skilltrial_chain::anchor::MEMO_PROGRAM_ID.to_bytes()
        );
    }

    #[test]
    fn run_open_is_byte_for_byte_the_program_crates_instruction_in_solanas_message() {
        let idl = Idl::committed().unwrap();
        let user = Address([0x41; 32]);
        let runner = Address([0x52; 32]);
        let args = RunOpen {
            manifest_hash: [0xab; 32],
            planned_trials: 54,
            per_request_cap: 1_234_567,
            escrow: 54 * (1_234_567 + 5_000),
            deadline: 1_764_600_000,
            fee_per_trial: 5_000,
            runner,
        };
        let blockhash = [3u8; 32];
        let theirs = ix::run_open(
            &pubkey(&user),
            skilltrial_chain::ix::RunOpenArgs {
                manifest_hash: args.manifest_hash,
                planned_trials: args.planned_trials,
                per_request_cap: args.per_request_cap,
                escrow: args.escrow,
                deadline: args.deadline,
                expected_fee_per_trial: args.fee_per_trial,
                expected_runner: skilltrial_chain::anchor_key(&pubkey(&runner)),
            },
        );
        assert_eq!(
            ours(&user, idl.run_open(&user, &args).unwrap(), blockhash),
            solana_bytes(&pubkey(&user), theirs, blockhash)
        );
    }

    #[test]
    fn run_cancel_run_close_and_the_anchor_memo_are_the_cli_s_bytes() {
        let idl = Idl::committed().unwrap();
        let user = Address([0x11; 32]);
        let run = Address([0x99; 32]);
        let blockhash = [5u8; 32];
        assert_eq!(
            ours(&user, idl.run_cancel(&user, &run), blockhash),
            solana_bytes(
                &pubkey(&user),
                ix::run_cancel(&pubkey(&user), &pubkey(&run)),
                blockhash
            )
        );
        assert_eq!(
            ours(&user, idl.run_close(&user, &run), blockhash),
            solana_bytes(
                &pubkey(&user),
                ix::run_close(&pubkey(&user), &pubkey(&run)),
                blockhash
            )
        );
        let memo = skilltrial_chain::anchor::AnchorMemo {
            manifest_hash: [1; 32],
            report_hash: [2; 32],
        };
        assert_eq!(
            ours(&user, anchor_memo(&user, &[1; 32], &[2; 32]), blockhash),
            solana_bytes(&pubkey(&user), memo.instruction(&pubkey(&user)), blockhash)
        );
    }
}

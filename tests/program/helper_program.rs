//! Test-only builtin programs the buyback tests add to the bank (`harness::start_with`), so
//! that substitutions a real attacker could deploy are tried against the program:
//!
//! - `NOOP` accepts any instruction and does nothing: burn-shaped data sent to it burns nothing;
//! - `FORWARDER` invokes (CPI) the program passed as its last account with its own data and its
//!   other accounts, signer and writable flags forwarded: a burn or a buyback one level down.
//!
//! They run as native builtins (`processor!`) on both program layers; CPIs go through
//! solana-program-test's syscall stubs into the real Token program or the program under test.

use solana_account_info::AccountInfo;
use solana_instruction::{AccountMeta, Instruction};
use solana_program_error::{ProgramError, ProgramResult};
use solana_program_test::{ProgramTest, processor};
use solana_pubkey::Pubkey;

/// A program that does nothing.
pub(crate) const NOOP: Pubkey = Pubkey::new_from_array([0xB1; 32]);
/// A program that forwards its instruction to the program named by its last account.
pub(crate) const FORWARDER: Pubkey = Pubkey::new_from_array([0xB2; 32]);

fn noop(_program_id: &Pubkey, _accounts: &[AccountInfo], _data: &[u8]) -> ProgramResult {
    Ok(())
}

fn forward(_program_id: &Pubkey, accounts: &[AccountInfo], data: &[u8]) -> ProgramResult {
    let (program, rest) = accounts
        .split_last()
        .ok_or(ProgramError::NotEnoughAccountKeys)?;
    let inner = Instruction {
        program_id: *program.key,
        accounts: rest
            .iter()
            .map(|a| AccountMeta {
                pubkey: *a.key,
                is_signer: a.is_signer,
                is_writable: a.is_writable,
            })
            .collect(),
        data: data.to_vec(),
    };
    // The signature of the outer transaction's signers carries over to the callee.
    solana_sysvar::program_stubs::sol_invoke_signed(&inner, accounts, &[])
}

/// Adds both programs to a bank being built (pass to `harness::start_with`).
pub(crate) fn add(pt: &mut ProgramTest) {
    pt.add_builtin_program("noop", NOOP, processor!(noop).unwrap());
    pt.add_builtin_program("forwarder", FORWARDER, processor!(forward).unwrap());
}

/// `inner`, sent through `FORWARDER`: the same data and accounts, then `inner`'s program.
pub(crate) fn forwarded(inner: Instruction) -> Instruction {
    let mut accounts = inner.accounts;
    accounts.push(AccountMeta::new_readonly(inner.program_id, false));
    Instruction {
        program_id: FORWARDER,
        accounts,
        data: inner.data,
    }
}

/// `inner`'s data and accounts sent to `NOOP` instead of its program.
pub(crate) fn to_noop(inner: Instruction) -> Instruction {
    Instruction {
        program_id: NOOP,
        ..inner
    }
}

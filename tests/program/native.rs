//! The native layer of the program tests, for machines where the sBPF toolchain cannot be
//! installed: the program's Anchor entrypoint runs as a builtin inside the same
//! solana-program-test 4.2.2 bank, with the same tests.
//!
//! Two adapters make that honest:
//! - `process` unifies the lifetimes Anchor's `entry<'info>` asks for (the `processor!` ABI has
//!   independent ones) by copying the call's inputs — a few bytes leaked per call, tests only;
//! - `bridge_syscalls` routes the program's syscalls to the runtime. anchor-lang (solana-v3)
//!   calls CPIs and sysvars through solana-sysvar 3.x's stub table, while solana-program-test
//!   4.2.2 fills solana-sysvar 4.x's; without the bridge every CPI would silently do nothing and
//!   every `Clock::get()` would fail. The bridge shares program-test's own stubs between both.
//!
//! Compute units are not measured in this layer (a builtin is not metered like sBPF), so cost
//! targets are only asserted against the `.so`.

use std::sync::{Arc, Once};

use solana_account_info::AccountInfo;
use solana_instruction::Instruction;
use solana_program_error::ProgramResult;
use solana_pubkey::Pubkey;
use solana_sysvar::program_stubs as v4;
use solana_sysvar_v3::program_stubs as v3;

/// The program's entrypoint as a `processor!` builtin.
pub fn process(program_id: &Pubkey, accounts: &[AccountInfo], data: &[u8]) -> ProgramResult {
    let program_id: &Pubkey = Box::leak(Box::new(*program_id));
    let data: &[u8] = Box::leak(data.to_vec().into_boxed_slice());
    let accounts: &[AccountInfo] = Box::leak(accounts.to_vec().into_boxed_slice());
    skilltrial_program::entry(program_id, accounts, data)
}

type Shared = Arc<Box<dyn v4::SyscallStubs>>;

/// Implements a stub trait by handing every call to program-test's own stubs. The raw pointers
/// are passed through untouched; the memory helpers keep their defaults (plain memory ops).
macro_rules! forward {
    ($ty:ident, $trait:path) => {
        struct $ty(Shared);
        impl $trait for $ty {
            fn sol_log(&self, message: &str) {
                self.0.sol_log(message)
            }
            fn sol_log_compute_units(&self) {
                self.0.sol_log_compute_units()
            }
            fn sol_remaining_compute_units(&self) -> u64 {
                self.0.sol_remaining_compute_units()
            }
            fn sol_invoke_signed(
                &self,
                instruction: &Instruction,
                account_infos: &[AccountInfo],
                signers_seeds: &[&[&[u8]]],
            ) -> ProgramResult {
                self.0
                    .sol_invoke_signed(instruction, account_infos, signers_seeds)
            }
            fn sol_get_sysvar(
                &self,
                sysvar_id_addr: *const u8,
                var_addr: *mut u8,
                offset: u64,
                length: u64,
            ) -> u64 {
                self.0
                    .sol_get_sysvar(sysvar_id_addr, var_addr, offset, length)
            }
            fn sol_get_clock_sysvar(&self, var_addr: *mut u8) -> u64 {
                self.0.sol_get_clock_sysvar(var_addr)
            }
            fn sol_get_epoch_schedule_sysvar(&self, var_addr: *mut u8) -> u64 {
                self.0.sol_get_epoch_schedule_sysvar(var_addr)
            }
            fn sol_get_fees_sysvar(&self, var_addr: *mut u8) -> u64 {
                self.0.sol_get_fees_sysvar(var_addr)
            }
            fn sol_get_rent_sysvar(&self, var_addr: *mut u8) -> u64 {
                self.0.sol_get_rent_sysvar(var_addr)
            }
            fn sol_get_epoch_rewards_sysvar(&self, var_addr: *mut u8) -> u64 {
                self.0.sol_get_epoch_rewards_sysvar(var_addr)
            }
            fn sol_get_last_restart_slot(&self, var_addr: *mut u8) -> u64 {
                self.0.sol_get_last_restart_slot(var_addr)
            }
            fn sol_get_epoch_stake(&self, vote_address: *const u8) -> u64 {
                self.0.sol_get_epoch_stake(vote_address)
            }
            fn sol_get_return_data(&self) -> Option<(Pubkey, Vec<u8>)> {
                self.0.sol_get_return_data()
            }
            fn sol_set_return_data(&self, data: &[u8]) {
                self.0.sol_set_return_data(data)
            }
            fn sol_log_data(&self, fields: &[&[u8]]) {
                self.0.sol_log_data(fields)
            }
            fn sol_get_processed_sibling_instruction(&self, index: usize) -> Option<Instruction> {
                self.0.sol_get_processed_sibling_instruction(index)
            }
            fn sol_get_stack_height(&self) -> u64 {
                self.0.sol_get_stack_height()
            }
        }
    };
}

forward!(IntoV3, v3::SyscallStubs);
forward!(IntoV4, v4::SyscallStubs);

/// Shares program-test's stubs (installed when the first bank starts) with solana-sysvar 3.x.
/// Call after `start_with_context`; idempotent.
pub fn bridge_syscalls() {
    static BRIDGE: Once = Once::new();
    BRIDGE.call_once(|| {
        struct Placeholder;
        impl v4::SyscallStubs for Placeholder {}
        let runtime: Shared = Arc::new(v4::set_syscall_stubs(Box::new(Placeholder)));
        v4::set_syscall_stubs(Box::new(IntoV4(Arc::clone(&runtime))));
        v3::set_syscall_stubs(Box::new(IntoV3(runtime)));
    });
}

//! One builder per program instruction, returning the host's `Instruction` ready to sign.
//!
//! **Invariant:** program ids, seeds and instruction layouts come from the program crate; nothing
//! here retypes them. Data is `skilltrial::instruction::X { .. }.data()` (Anchor's discriminator
//! then borsh), accounts `skilltrial::accounts::X { .. }.to_account_metas(None)` (order, signer
//! and writable flags from the program's `#[derive(Accounts)]`), and the arguments are the
//! program's own `Args` types, re-exported here: a changed instruction fails to compile here.
//!
//! Builders take the keys a caller chooses (signers, and the run an instruction acts on) and
//! derive the rest (`pda`). `run` is normally `pda::run(user, manifest_hash)`; it is a parameter
//! so that a caller holding the run's address need not know its manifest — the program checks it
//! against its seeds either way.

use anchor_lang::{InstructionData, ToAccountMetas};
pub use skilltrial::instructions::{
    BuybackExecuteArgs, ConfigInitArgs, ConfigUpdateArgs, RunFinalizeArgs, RunOpenArgs,
    RunSettleArgs, TrialCharge,
};
pub use skilltrial::state::{BuybackRate, ConfigChange, RunnerKeys, SpendingLimit};
use skilltrial::{accounts, instruction};

use crate::{
    INSTRUCTIONS_SYSVAR_ID, Instruction, Pubkey, SYSTEM_PROGRAM_ID, anchor_key, pda, to_instruction,
};

/// `config_init`: creates the config, fee vault and buyback log. `admin` signs and pays, and must
/// be the program's upgrade authority.
pub fn config_init(admin: &Pubkey, args: ConfigInitArgs) -> Instruction {
    let accounts = accounts::ConfigInit {
        admin: anchor_key(admin),
        program_data: anchor_key(&pda::program_data()),
        config: anchor_key(&pda::config()),
        fee_vault: anchor_key(&pda::fee_vault()),
        buyback_log: anchor_key(&pda::buyback_log()),
        system_program: anchor_key(&SYSTEM_PROGRAM_ID),
    };
    to_instruction(
        instruction::ConfigInit { args }.data(),
        accounts.to_account_metas(None),
    )
}

fn admin_accounts(admin: &Pubkey) -> Vec<anchor_lang::prelude::AccountMeta> {
    accounts::ConfigUpdate {
        admin: anchor_key(admin),
        config: anchor_key(&pda::config()),
    }
    .to_account_metas(None)
}

/// `config_update`: the admin's immediate changes (fee, minimum deadline, revoking the runner,
/// proposing an admin); `admin` signs.
pub fn config_update(admin: &Pubkey, args: ConfigUpdateArgs) -> Instruction {
    to_instruction(
        instruction::ConfigUpdate { args }.data(),
        admin_accounts(admin),
    )
}

/// `config_propose`: records a time-locked change (an empty one withdraws it); `admin` signs.
pub fn config_propose(admin: &Pubkey, change: ConfigChange) -> Instruction {
    to_instruction(
        instruction::ConfigPropose { change }.data(),
        admin_accounts(admin),
    )
}

/// `config_apply`: applies the pending change once its time lock is over; `admin` signs.
pub fn config_apply(admin: &Pubkey) -> Instruction {
    to_instruction(instruction::ConfigApply {}.data(), admin_accounts(admin))
}

/// `config_accept_admin`: the proposed admin, who signs, takes over.
pub fn config_accept_admin(new_admin: &Pubkey) -> Instruction {
    let accounts = accounts::ConfigAcceptAdmin {
        new_admin: anchor_key(new_admin),
        config: anchor_key(&pda::config()),
    };
    to_instruction(
        instruction::ConfigAcceptAdmin {}.data(),
        accounts.to_account_metas(None),
    )
}

/// `run_open`: opens the run at `pda::run(user, args.manifest_hash)` and escrows `args.escrow`;
/// `user` signs and pays.
pub fn run_open(user: &Pubkey, args: RunOpenArgs) -> Instruction {
    let accounts = accounts::RunOpen {
        user: anchor_key(user),
        config: anchor_key(&pda::config()),
        fee_vault: anchor_key(&pda::fee_vault()),
        run: anchor_key(&pda::run(user, &args.manifest_hash)),
        system_program: anchor_key(&SYSTEM_PROGRAM_ID),
    };
    to_instruction(
        instruction::RunOpen { args }.data(),
        accounts.to_account_metas(None),
    )
}

/// `run_settle`: settles a batch of executed trials of `run`; the run's `runner` signs, and the
/// usage goes to `payout`, which must be the config's runner payout address.
pub fn run_settle(
    runner: &Pubkey,
    run: &Pubkey,
    payout: &Pubkey,
    args: RunSettleArgs,
) -> Instruction {
    let accounts = accounts::RunSettle {
        runner: anchor_key(runner),
        config: anchor_key(&pda::config()),
        run: anchor_key(run),
        fee_vault: anchor_key(&pda::fee_vault()),
        runner_payout: anchor_key(payout),
    };
    to_instruction(
        instruction::RunSettle { args }.data(),
        accounts.to_account_metas(None),
    )
}

/// `run_cancel`: stops new dispatches of `run`; its `user` signs.
pub fn run_cancel(user: &Pubkey, run: &Pubkey) -> Instruction {
    let accounts = accounts::RunCancel {
        user: anchor_key(user),
        run: anchor_key(run),
    };
    to_instruction(
        instruction::RunCancel {}.data(),
        accounts.to_account_metas(None),
    )
}

/// `run_finalize`: records the report hash on `run` and books its remainder for the user; the
/// config's `runner` signs.
pub fn run_finalize(runner: &Pubkey, run: &Pubkey, args: RunFinalizeArgs) -> Instruction {
    let accounts = accounts::RunFinalize {
        runner: anchor_key(runner),
        config: anchor_key(&pda::config()),
        run: anchor_key(run),
    };
    to_instruction(
        instruction::RunFinalize { args }.data(),
        accounts.to_account_metas(None),
    )
}

/// `run_refund_expired`: once settling has closed, returns `run`'s remainder and rent to its
/// `user`, who signs, and closes it.
pub fn run_refund_expired(user: &Pubkey, run: &Pubkey) -> Instruction {
    let accounts = accounts::RunRefundExpired {
        user: anchor_key(user),
        run: anchor_key(run),
    };
    to_instruction(
        instruction::RunRefundExpired {}.data(),
        accounts.to_account_metas(None),
    )
}

/// `run_close`: closes a finalized `run`, returning its remainder and rent; its `user` signs.
pub fn run_close(user: &Pubkey, run: &Pubkey) -> Instruction {
    let accounts = accounts::RunClose {
        user: anchor_key(user),
        run: anchor_key(run),
    };
    to_instruction(
        instruction::RunClose {}.data(),
        accounts.to_account_metas(None),
    )
}

/// `buyback_execute`: releases fee-vault lamports to the config's `runner` (who signs). The
/// top-level instruction at `args.burn_index` must burn exactly `args.tokens_burned` of the
/// configured mint from `token_account`, the runner's own.
pub fn buyback_execute(
    runner: &Pubkey,
    token_account: &Pubkey,
    args: BuybackExecuteArgs,
) -> Instruction {
    let accounts = accounts::BuybackExecute {
        runner: anchor_key(runner),
        config: anchor_key(&pda::config()),
        fee_vault: anchor_key(&pda::fee_vault()),
        buyback_log: anchor_key(&pda::buyback_log()),
        runner_token_account: anchor_key(token_account),
        instructions: anchor_key(&INSTRUCTIONS_SYSVAR_ID),
    };
    to_instruction(
        instruction::BuybackExecute { args }.data(),
        accounts.to_account_metas(None),
    )
}

#[cfg(test)]
mod tests {
    use anchor_lang::{AnchorDeserialize, Discriminator};

    use super::*;
    use crate::{AccountMeta, PROGRAM_ID};

    fn key(byte: u8) -> Pubkey {
        Pubkey::new_from_array([byte; 32])
    }

    fn open_args(manifest_hash: [u8; 32]) -> RunOpenArgs {
        RunOpenArgs {
            manifest_hash,
            planned_trials: 54,
            per_request_cap: 50_000,
            escrow: 13_500_000,
            deadline: 1_800_000_000,
            expected_fee_per_trial: 200_000,
            expected_runner: anchor_key(&key(9)),
        }
    }

    /// The data is the program's discriminator followed by the arguments, and decodes back
    /// through the program's own type to the same values.
    #[test]
    fn run_open_data_round_trips_through_the_programs_discriminator() {
        let ix = run_open(&key(1), open_args([3; 32]));
        let disc = instruction::RunOpen::DISCRIMINATOR;
        assert_eq!(&ix.data[..disc.len()], disc);
        let decoded = instruction::RunOpen::try_from_slice(&ix.data[disc.len()..]).unwrap();
        let back = decoded.args;
        assert_eq!(
            (
                back.manifest_hash,
                back.planned_trials,
                back.per_request_cap,
                back.escrow,
                back.deadline,
                back.expected_fee_per_trial,
                back.expected_runner,
            ),
            (
                [3; 32],
                54,
                50_000,
                13_500_000,
                1_800_000_000,
                200_000,
                key(9)
            )
        );
    }

    #[test]
    fn run_settle_data_round_trips_with_every_charge_in_order() {
        let trials = vec![
            TrialCharge {
                index: 7,
                usage: 1_000,
            },
            TrialCharge { index: 2, usage: 0 },
        ];
        let args = RunSettleArgs {
            expected_run_id: 12,
            evidence_hash: [5; 32],
            trials,
        };
        let ix = run_settle(&key(1), &key(2), &key(3), args);
        let disc = instruction::RunSettle::DISCRIMINATOR;
        assert_eq!(&ix.data[..disc.len()], disc);
        let back = instruction::RunSettle::try_from_slice(&ix.data[disc.len()..]).unwrap();
        let charges: Vec<(u16, u64)> = back
            .args
            .trials
            .iter()
            .map(|t| (t.index, t.usage))
            .collect();
        assert_eq!(charges, [(7, 1_000), (2, 0)]);
        assert_eq!(
            (back.args.expected_run_id, back.args.evidence_hash),
            (12, [5; 32])
        );
        assert_eq!(
            ix.accounts,
            [
                AccountMeta::new_readonly(key(1), true),
                AccountMeta::new_readonly(pda::config(), false),
                AccountMeta::new(key(2), false),
                AccountMeta::new(pda::fee_vault(), false),
                AccountMeta::new(key(3), false),
            ],
            "the runner signs without paying in; usage goes to the payout account"
        );
    }

    /// `run_open` puts the run at the PDA of (user, manifest) — the address the program's seeds
    /// check — with the user as the signing payer; the config is only read.
    #[test]
    fn run_open_addresses_the_users_run_for_that_manifest() {
        let user = key(1);
        let manifest = [4u8; 32];
        let ix = run_open(&user, open_args(manifest));
        assert_eq!(ix.program_id, PROGRAM_ID);
        assert_eq!(
            ix.accounts,
            [
                AccountMeta::new(user, true),
                AccountMeta::new_readonly(pda::config(), false),
                AccountMeta::new(pda::fee_vault(), false),
                AccountMeta::new(pda::run(&user, &manifest), false),
                AccountMeta::new_readonly(SYSTEM_PROGRAM_ID, false),
            ]
        );
    }

    /// Every builder targets the program and starts its data with that instruction's
    /// discriminator (twelve instructions, twelve distinct discriminators).
    #[test]
    fn every_builder_carries_its_own_discriminator() {
        let (a, b, c) = (key(1), key(2), key(3));
        let init = ConfigInitArgs {
            runner: anchor_key(&b),
            runner_payout: anchor_key(&b),
            fee_per_trial: 1,
            min_deadline_secs: 60,
            time_lock_secs: 3600,
            usage_limit: SpendingLimit {
                amount: 1,
                period_secs: 60,
            },
            sktrial_mint: anchor_key(&c),
            buyback_interval_secs: 60,
            max_buyback_lamports: 1,
            buyback_rate: BuybackRate {
                tokens: 1,
                lamports: 1,
            },
        };
        let settle = RunSettleArgs {
            expected_run_id: 1,
            evidence_hash: [0; 32],
            trials: vec![],
        };
        let finalize = RunFinalizeArgs {
            expected_run_id: 1,
            report_hash: [0; 32],
        };
        let buyback = BuybackExecuteArgs {
            lamports_in: 1,
            tokens_burned: 1,
            burn_index: 1,
        };
        let built: [(Instruction, &[u8]); 12] = [
            (
                config_init(&a, init),
                instruction::ConfigInit::DISCRIMINATOR,
            ),
            (
                config_update(&a, ConfigUpdateArgs::default()),
                instruction::ConfigUpdate::DISCRIMINATOR,
            ),
            (
                config_propose(&a, ConfigChange::default()),
                instruction::ConfigPropose::DISCRIMINATOR,
            ),
            (config_apply(&a), instruction::ConfigApply::DISCRIMINATOR),
            (
                config_accept_admin(&a),
                instruction::ConfigAcceptAdmin::DISCRIMINATOR,
            ),
            (
                run_open(&a, open_args([0; 32])),
                instruction::RunOpen::DISCRIMINATOR,
            ),
            (
                run_settle(&a, &b, &c, settle),
                instruction::RunSettle::DISCRIMINATOR,
            ),
            (run_cancel(&a, &b), instruction::RunCancel::DISCRIMINATOR),
            (
                run_finalize(&a, &b, finalize),
                instruction::RunFinalize::DISCRIMINATOR,
            ),
            (
                run_refund_expired(&a, &b),
                instruction::RunRefundExpired::DISCRIMINATOR,
            ),
            (run_close(&a, &b), instruction::RunClose::DISCRIMINATOR),
            (
                buyback_execute(&a, &c, buyback),
                instruction::BuybackExecute::DISCRIMINATOR,
            ),
        ];
        let mut seen = std::collections::HashSet::new();
        for (ix, disc) in &built {
            assert_eq!(ix.program_id, PROGRAM_ID);
            assert!(ix.data.starts_with(disc));
            assert!(seen.insert(disc.to_vec()), "discriminators are distinct");
        }
    }
}

//! The committed IDL against the program crate the chain client builds from.

use skilltrial_e2e::workspace_root;
use skilltrial_program as skilltrial;

/// The committed IDL (idl/skilltrial.json, from scripts/idl.sh) and the program crate these
/// tests build instructions from agree: same address, same instruction discriminators, and the
/// same `(code, name)` for every error — a reordered or renamed variant fails here, inside
/// `cargo test`, not only in `scripts/idl.sh --check`.
#[test]
fn the_committed_idl_matches_the_program_crate() {
    use anchor_lang::Discriminator;
    use skilltrial::error::SkillTrialError;
    use skilltrial::instruction as ix;
    let text = std::fs::read_to_string(workspace_root().join("idl/skilltrial.json")).unwrap();
    let idl: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(idl["address"], skilltrial::ID.to_string());
    let expected: [(&str, &[u8]); 12] = [
        ("buyback_execute", ix::BuybackExecute::DISCRIMINATOR),
        ("config_accept_admin", ix::ConfigAcceptAdmin::DISCRIMINATOR),
        ("config_apply", ix::ConfigApply::DISCRIMINATOR),
        ("config_init", ix::ConfigInit::DISCRIMINATOR),
        ("config_propose", ix::ConfigPropose::DISCRIMINATOR),
        ("config_update", ix::ConfigUpdate::DISCRIMINATOR),
        ("run_cancel", ix::RunCancel::DISCRIMINATOR),
        ("run_close", ix::RunClose::DISCRIMINATOR),
        ("run_finalize", ix::RunFinalize::DISCRIMINATOR),
        ("run_open", ix::RunOpen::DISCRIMINATOR),
        ("run_refund_expired", ix::RunRefundExpired::DISCRIMINATOR),
        ("run_settle", ix::RunSettle::DISCRIMINATOR),
    ];
    let instructions = idl["instructions"].as_array().unwrap();
    assert_eq!(instructions.len(), expected.len());
    for (name, discriminator) in expected {
        let entry = instructions
            .iter()
            .find(|i| i["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing from the IDL"));
        let bytes: Vec<u8> = serde_json::from_value(entry["discriminator"].clone()).unwrap();
        assert_eq!(bytes, discriminator, "{name}'s discriminator");
    }
    // Every variant, by code and name, from the program's own enum (`name()` is the Rust
    // variant name, which is how the IDL spells it too).
    let in_idl: Vec<(u64, String)> = idl["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["code"].as_u64().unwrap(),
                e["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut in_program = Vec::new();
    let mut code = anchor_lang::error::ERROR_CODE_OFFSET;
    // Walk the enum through its codes until a code no longer maps to a variant.
    while let Some(variant) = variant_for(code) {
        in_program.push((u64::from(u32::from(variant)), variant.name()));
        code += 1;
    }
    assert_eq!(in_idl, in_program);
    assert_eq!(in_program.len(), 44, "every SkillTrialError variant");
    assert_eq!(u32::from(SkillTrialError::PayoutIsProgramAccount), 6041);
    assert_eq!(u32::from(SkillTrialError::RequestCapTooLow), 6043);
}

/// The program's error with `code`, if any: every variant listed once, so a new variant that is
/// not listed here makes the count assertion above fail.
fn variant_for(code: u32) -> Option<skilltrial::error::SkillTrialError> {
    use skilltrial::error::SkillTrialError as E;
    const ALL: [E; 44] = [
        E::TrialCountOutOfRange,
        E::ZeroRequestCap,
        E::EscrowTooSmall,
        E::DeadlineTooSoon,
        E::TrialOutOfRange,
        E::TrialAlreadySettled,
        E::ChargeAboveCap,
        E::BadBatch,
        E::RunNotOpen,
        E::RunNotFinished,
        E::DeadlineNotReached,
        E::ReserveExhausted,
        E::Overflow,
        E::BuybackTooSoon,
        E::BurnMissing,
        E::FeeVaultShort,
        E::InvalidConfig,
        E::CancelWindowClosed,
        E::NotUpgradeAuthority,
        E::AccountingBroken,
        E::FeeChanged,
        E::RunnerChanged,
        E::NoRunner,
        E::DeadlineTooFar,
        E::DeadlinePassed,
        E::NotRunsRunner,
        E::RunnerRevoked,
        E::WrongRun,
        E::WrongPayout,
        E::SpendingLimitExceeded,
        E::ZeroBuyback,
        E::BuybackAboveCap,
        E::BuybackBelowRate,
        E::BuybackNotTopLevel,
        E::OneBuybackPerTransaction,
        E::NotRunnersTokenAccount,
        E::NotPendingAdmin,
        E::TimeLockActive,
        E::NothingPending,
        E::DefaultKey,
        E::PayoutIsSigner,
        E::PayoutIsProgramAccount,
        E::AccountExists,
        E::RequestCapTooLow,
    ];
    ALL.into_iter().find(|e| u32::from(*e) == code)
}

//! The pack's decoder against the canonical Solana crates, on the pack's real mainnet inputs and
//! on synthetic cases: spl-token / spl-token-2022 unpacking, solana-transaction deserialization,
//! and the ATA interface's derivation. If our decoder and the canonical crates ever disagree,
//! golden records cannot be trusted, so these tests guard every golden record.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use base64::Engine as _;
use skilltrial_runner::solana::account::{self, DecodedAccount, Extension, TokenProgram};
use skilltrial_runner::solana::transaction::{self, TxVersion};
use skilltrial_runner::solana::{Address, DecodeError, pda, program};
use solana_program_pack::Pack;
use spl_token_2022_interface::extension::{
    BaseStateWithExtensions, StateWithExtensions, default_account_state::DefaultAccountState,
    interest_bearing_mint::InterestBearingConfig, transfer_fee::TransferFeeConfig,
};

fn task_file(task: &str, name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/packs/solana-core@1.0.3/tasks")
        .join(task)
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn bytes_of(option: Option<Address>) -> Option<[u8; 32]> {
    option.map(|a| a.0)
}

#[test]
fn usdc_mint_matches_spl_token_unpack() {
    let data = task_file("acct-usdc-mint", "input.bin");
    let canonical = spl_token_interface::state::Mint::unpack(&data).unwrap();
    let DecodedAccount::Mint {
        mint, extensions, ..
    } = account::decode(TokenProgram::Token, &data).unwrap()
    else {
        panic!("not a mint")
    };
    assert_eq!(
        bytes_of(mint.mint_authority),
        Option::from(canonical.mint_authority).map(|k: solana_pubkey_v3::Pubkey| k.to_bytes())
    );
    assert_eq!(
        bytes_of(mint.freeze_authority),
        Option::from(canonical.freeze_authority).map(|k: solana_pubkey_v3::Pubkey| k.to_bytes())
    );
    assert_eq!(mint.supply, canonical.supply);
    assert_eq!(mint.decimals, canonical.decimals);
    assert_eq!(mint.is_initialized, canonical.is_initialized);
    assert!(extensions.is_empty());
}

#[test]
fn fzyeg_token_2022_mint_matches_state_with_extensions() {
    let data = task_file("acct-t22-fzyeg-mint", "input.bin");
    let canonical =
        StateWithExtensions::<spl_token_2022_interface::state::Mint>::unpack(&data).unwrap();
    let DecodedAccount::Mint {
        mint, extensions, ..
    } = account::decode(TokenProgram::Token2022, &data).unwrap()
    else {
        panic!("not a mint")
    };
    // The trap: tags are zero but stale key bytes remain; both must read "no authority".
    assert_eq!(mint.mint_authority, None);
    assert!(canonical.base.mint_authority.is_none());
    assert_eq!(mint.freeze_authority, None);
    assert!(canonical.base.freeze_authority.is_none());
    assert_eq!(mint.supply, canonical.base.supply);
    assert_eq!(mint.decimals, canonical.base.decimals);

    let types: Vec<u16> = canonical
        .get_extension_types()
        .unwrap()
        .into_iter()
        .map(u16::from)
        .collect();
    assert_eq!(types, vec![1, 10, 6]);
    assert_eq!(extensions.len(), 3);

    let fee = canonical.get_extension::<TransferFeeConfig>().unwrap();
    let Extension::TransferFeeConfig {
        transfer_fee_config_authority,
        withdraw_withheld_authority,
        withheld_amount,
        older,
        newer,
    } = &extensions[0]
    else {
        panic!("first extension is not the transfer fee config")
    };
    let opt = |m: Option<solana_pubkey_v3::Pubkey>| m.map(|k| k.to_bytes());
    assert_eq!(
        bytes_of(*transfer_fee_config_authority),
        opt(Option::from(fee.transfer_fee_config_authority))
    );
    assert_eq!(
        bytes_of(*withdraw_withheld_authority),
        opt(Option::from(fee.withdraw_withheld_authority))
    );
    assert_eq!(*withheld_amount, u64::from(fee.withheld_amount));
    for (ours, theirs) in [
        (older, &fee.older_transfer_fee),
        (newer, &fee.newer_transfer_fee),
    ] {
        assert_eq!(ours.epoch, u64::from(theirs.epoch));
        assert_eq!(ours.maximum_fee, u64::from(theirs.maximum_fee));
        assert_eq!(
            ours.basis_points,
            u16::from(theirs.transfer_fee_basis_points)
        );
        // Fees agree with the canonical calculation across the range.
        for amount in [0u64, 1, 99, 10_000, 123_456, 1 << 40, u64::MAX] {
            assert_eq!(
                ours.fee_for(amount),
                theirs.calculate_fee(amount),
                "fee for {amount}"
            );
        }
    }

    let interest = canonical.get_extension::<InterestBearingConfig>().unwrap();
    let Extension::InterestBearingConfig {
        rate_authority,
        initialization_timestamp,
        current_rate,
        ..
    } = &extensions[1]
    else {
        panic!("second extension is not interest bearing")
    };
    assert_eq!(
        bytes_of(*rate_authority),
        opt(Option::from(interest.rate_authority))
    );
    assert_eq!(
        *initialization_timestamp,
        i64::from(interest.initialization_timestamp)
    );
    assert_eq!(*current_rate, i16::from(interest.current_rate));

    let default_state = canonical.get_extension::<DefaultAccountState>().unwrap();
    assert_eq!(
        extensions[2],
        Extension::DefaultAccountState {
            state: default_state.state
        }
    );
}

#[test]
fn synthetic_token_accounts_match_spl_token_unpack() {
    use solana_program_option::COption;
    let key = |b: u8| solana_pubkey_v3::Pubkey::new_from_array([b; 32]);
    let cases = [
        spl_token_interface::state::Account {
            mint: key(1),
            owner: key(2),
            amount: u64::MAX,
            delegate: COption::Some(key(3)),
            state: spl_token_interface::state::AccountState::Frozen,
            is_native: COption::Some(2_039_280),
            delegated_amount: 7,
            close_authority: COption::None,
        },
        spl_token_interface::state::Account {
            mint: key(9),
            owner: key(8),
            amount: 0,
            delegate: COption::None,
            state: spl_token_interface::state::AccountState::Initialized,
            is_native: COption::None,
            delegated_amount: 0,
            close_authority: COption::Some(key(4)),
        },
    ];
    for case in cases {
        let mut data = vec![0u8; spl_token_interface::state::Account::LEN];
        case.pack_into_slice(&mut data);
        let DecodedAccount::TokenAccount { account, .. } =
            account::decode(TokenProgram::Token, &data).unwrap()
        else {
            panic!("not a token account")
        };
        assert_eq!(account.mint.0, case.mint.to_bytes());
        assert_eq!(account.owner.0, case.owner.to_bytes());
        assert_eq!(account.amount, case.amount);
        assert_eq!(
            account.delegate.map(|a| a.0),
            Option::from(case.delegate).map(|k: solana_pubkey_v3::Pubkey| k.to_bytes())
        );
        assert_eq!(account.state, case.state as u8);
        assert_eq!(account.is_native, Option::from(case.is_native));
        assert_eq!(account.delegated_amount, case.delegated_amount);
        assert_eq!(
            account.close_authority.map(|a| a.0),
            Option::from(case.close_authority).map(|k: solana_pubkey_v3::Pubkey| k.to_bytes())
        );
    }
}

fn response(task: &str) -> serde_json::Value {
    serde_json::from_slice(&task_file(task, "input.json")).unwrap()
}

fn wire_bytes(result: &serde_json::Value) -> Vec<u8> {
    let b64 = result["transaction"][0].as_str().unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap()
}

#[test]
fn transactions_match_solana_transaction_deserialization() {
    for (task, version) in [
        ("tx-legacy-nonce-bonk", TxVersion::Legacy),
        ("tx-v0-alt-usdc", TxVersion::V0),
    ] {
        let result = response(task);
        let bytes = wire_bytes(&result);
        let canonical: solana_transaction_serde::versioned::VersionedTransaction =
            bincode::deserialize(&bytes).unwrap();
        let ours = transaction::decode_response(&result).unwrap();
        assert_eq!(ours.wire.version, version, "{task}");
        assert_eq!(
            ours.signature,
            canonical.signatures[0].to_string(),
            "{task}"
        );
        let message = &canonical.message;
        let keys: Vec<[u8; 32]> = message
            .static_account_keys()
            .iter()
            .map(|k| k.to_bytes())
            .collect();
        let our_keys: Vec<[u8; 32]> = ours.wire.static_keys.iter().map(|k| k.0).collect();
        assert_eq!(our_keys, keys, "{task}: static keys");
        let header = message.header();
        assert_eq!(
            ours.wire.header,
            (
                header.num_required_signatures,
                header.num_readonly_signed_accounts,
                header.num_readonly_unsigned_accounts
            )
        );
        assert_eq!(
            ours.wire.recent_blockhash.0,
            message.recent_blockhash().to_bytes()
        );
        assert_eq!(ours.wire.instructions.len(), message.instructions().len());
        for (a, b) in ours.wire.instructions.iter().zip(message.instructions()) {
            assert_eq!(
                (a.program_index, &a.accounts, &a.data),
                (b.program_id_index, &b.accounts, &b.data),
                "{task}"
            );
        }
        let lookups = message.address_table_lookups().unwrap_or_default();
        assert_eq!(ours.wire.lookups.len(), lookups.len());
        for (a, b) in ours.wire.lookups.iter().zip(lookups) {
            assert_eq!(
                (a.table.0, &a.writable, &a.readonly),
                (
                    b.account_key.to_bytes(),
                    &b.writable_indexes,
                    &b.readonly_indexes
                )
            );
        }
    }
}

#[test]
fn v0_account_index_space_is_static_then_loaded_writable_then_readonly() {
    let ours = transaction::decode_response(&response("tx-v0-alt-usdc")).unwrap();
    // 7 static + 4 writable + 4 readonly = 15, the length of preBalances (FACTS.md §2).
    assert_eq!(ours.account_keys.len(), 15);
    assert_eq!(
        ours.account_keys[7].to_string(),
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
    );
    assert_eq!(ours.account_keys[11].to_string(), program::SYSTEM);
}

#[test]
fn a_version_one_message_is_excluded() {
    // Given the legacy fixture's signatures in front of a message that claims version 1
    let result = response("tx-legacy-nonce-bonk");
    let mut bytes = wire_bytes(&result);
    let message_start = 1 + 64 * 2;
    bytes.insert(message_start, 0x81);
    assert_eq!(
        transaction::decode_wire(&bytes).map(|_| ()),
        Err(DecodeError::UnsupportedVersion(1))
    );
    let mut doctored = result.clone();
    doctored["transaction"][0] = base64::engine::general_purpose::STANDARD
        .encode(&bytes)
        .into();
    doctored["version"] = 1.into();
    assert!(matches!(
        transaction::decode_response(&doctored),
        Err(DecodeError::UnsupportedVersion(1))
    ));
}

#[test]
fn ata_derivation_matches_the_ata_interface() {
    let owners = [
        "9RvNi4pPm8euMuPGPNQVjR8wWTPawZMvqfqA2QQmwVHC",
        "AC5RDfQFmDS1deWZos921JfqscXdByf8BKHs5ACWjtW2",
        "12VFrc1dFynPzs4HBRdRoMKNm1jca2S2uhaNKCkdffwy",
    ];
    let mints = [
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
        "FZYEgCWzzedxcmxYvGXSkMrj7TaA3bXoaEv6XMnwtLKh",
    ];
    for owner in owners {
        for mint in mints {
            for token_program in [program::TOKEN, program::TOKEN_2022] {
                let (o, m, t): (Address, Address, Address) = (
                    owner.parse().unwrap(),
                    mint.parse().unwrap(),
                    token_program.parse().unwrap(),
                );
                let ours = pda::associated_token_address(&o, &m, &t).unwrap();
                let theirs = spl_associated_token_account_interface::address::get_associated_token_address_with_program_id(
                    &solana_pubkey_v3::Pubkey::new_from_array(o.0),
                    &solana_pubkey_v3::Pubkey::new_from_array(m.0),
                    &solana_pubkey_v3::Pubkey::new_from_array(t.0),
                );
                assert_eq!(ours.0, theirs.to_bytes(), "{owner} {mint} {token_program}");
            }
        }
    }
}

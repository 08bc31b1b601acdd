//! The committed IDL against the program crate the chain client builds from.

use skilltrial_e2e::workspace_root;
use skilltrial_program as skilltrial;

/// The committed IDL (idl/skilltrial.json, from scripts/idl.sh) and the program crate these
/// tests build instructions from agree: same address, same instruction discriminators, same
/// error codes. Off-chain code that reads either gets the same program.
#[test]
fn the_committed_idl_matches_the_program_crate() {
    use anchor_lang::Discriminator;
    use skilltrial::instruction as ix;
    let text = std::fs::read_to_string(workspace_root().join("idl/skilltrial.json")).unwrap();
    let idl: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(idl["address"], skilltrial::ID.to_string());
    let expected: [(&str, &[u8]); 9] = [
        ("buyback_execute", ix::BuybackExecute::DISCRIMINATOR),
        ("config_init", ix::ConfigInit::DISCRIMINATOR),
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
    let codes: Vec<u64> = idl["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_u64().unwrap())
        .collect();
    assert_eq!(codes, (6000..=6019).collect::<Vec<u64>>());
    assert_eq!(
        u32::from(skilltrial::error::SkillTrialError::CancelWindowClosed),
        6017
    );
}

//! Model profiles as a user writes them: the example in docs/runs.md parses as shown, with its
//! price and the price's source and date, and a local server's model name can be set without a
//! profile of one's own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use skilltrial_core::money::PerMtok;
use skilltrial_core::profile::{self, ProviderKind};

/// The first ```toml block under "## Model profiles" in docs/runs.md, exactly as a user copies it.
fn documented_example() -> String {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/runs.md");
    let text = std::fs::read_to_string(&docs).unwrap();
    let section = text
        .split("\n## Model profiles")
        .nth(1)
        .expect("docs/runs.md has a Model profiles section");
    let block = section
        .split("```toml\n")
        .nth(1)
        .expect("the section has a ```toml block");
    block.split("\n```").next().unwrap().to_owned()
}

#[test]
fn the_documented_profile_example_parses_with_its_price() {
    // Given the example profiles file from the docs, saved as the user's profiles file
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("profiles.toml");
    std::fs::write(&file, documented_example()).unwrap();

    // When its profiles are looked up
    let local = profile::find("my-vllm", Some(&file)).unwrap();
    let priced = profile::find("my-gateway-gpt-4.1", Some(&file)).unwrap();

    // Then the local one has no price and its own endpoint, and the priced one has its price,
    // source and date exactly as written
    assert_eq!(local.provider, ProviderKind::Openai);
    assert_eq!(local.model, "Qwen/Qwen3-8B");
    assert_eq!(local.base_url.as_deref(), Some("http://127.0.0.1:8000/v1"));
    assert_eq!(local.price, None);
    let price = priced.price.expect("the priced example has a price");
    assert_eq!(
        (price.input, price.output),
        (PerMtok(2_000_000), PerMtok(8_000_000))
    );
    assert_eq!(price.source, "https://platform.openai.com/docs/pricing");
    assert_eq!(price.as_of, "2025-04-14");
}

#[test]
fn a_local_servers_model_name_is_set_without_a_profile() {
    // Given the built-in profile for a server of one's own
    let local = profile::find("openai-compatible-local", None).unwrap();

    // When a model name is given, then the profile asks the server for that model
    let named = local.clone().with_model_name("qwen3:8b").unwrap();
    assert_eq!(named.model, "qwen3:8b");
    assert_eq!(named.id, "openai-compatible-local");

    // And an empty name is refused, naming the input
    assert_eq!(
        local.with_model_name("  ").unwrap_err().to_string(),
        "model name for profile openai-compatible-local: it is empty"
    );
}

#[test]
fn a_priced_profiles_model_name_cannot_be_changed() {
    // Given a priced profile: its price belongs to its model
    let priced = profile::find("gpt-4.1@2025-04-14", None).unwrap();

    // When another model name is asked for, then it is refused with the reason
    assert_eq!(
        priced.with_model_name("gpt-5").unwrap_err().to_string(),
        "model name for profile gpt-4.1@2025-04-14: only a profile without a price (a server of your own) takes a model name; this one is priced for gpt-4.1-2025-04-14"
    );
}

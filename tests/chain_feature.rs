//! A guard: the program's and the IDL's tests need `--features chain` (scripts/test.sh turns it
//! on). Without it a plain `cargo test --workspace` would run none of them and print nothing
//! about it; this test makes that loud, unless the skip is asked for by name.

#[test]
fn program_tests_ran_or_were_skipped_on_purpose() {
    if cfg!(feature = "chain") {
        return;
    }
    let skip = std::env::var("SKILLTRIAL_SKIP_CHAIN").is_ok_and(|v| v == "1");
    if skip {
        eprintln!("SKILLTRIAL_SKIP_CHAIN=1: the program and IDL tests were skipped");
        return;
    }
    panic!(
        "the program and IDL tests did not run: run with --features chain (scripts/test.sh), \
         or set SKILLTRIAL_SKIP_CHAIN=1 to skip them knowingly"
    );
}

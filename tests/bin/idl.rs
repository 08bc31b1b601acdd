//! Generates the program's IDL with Anchor's own builder (the logic of `anchor idl build`): it
//! compiles `programs/skilltrial` with `--features idl-build`, runs the IDL-printing tests the
//! Anchor macros generate, and assembles their output. Writes `idl/skilltrial.json`; with
//! `--check`, compares instead and fails when the committed IDL is stale.
//!
//! Run it through `scripts/idl.sh`, which builds it and clears `RUSTUP_TOOLCHAIN` (the builder
//! would otherwise pass a malformed `+toolchain` argument to cargo).

// A developer tool whose whole output is its messages (the print rule guards the product code).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use anchor_lang_idl::build::IdlBuilder;
use skilltrial_e2e::workspace_root;

fn main() -> ExitCode {
    let check = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--check") => true,
        Some(other) => {
            eprintln!("unknown argument {other:?}; usage: skilltrial-idl [--check]");
            return ExitCode::from(2);
        }
    };
    let root = workspace_root();
    let idl = match IdlBuilder::new()
        .program_path(root.join("programs/skilltrial"))
        .cargo_args(vec!["--locked".to_owned()])
        .build()
    {
        Ok(idl) => idl,
        Err(e) => {
            eprintln!("building the IDL failed: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let json = match serde_json::to_string_pretty(&idl) {
        Ok(json) => json + "\n",
        Err(e) => {
            eprintln!("serializing the IDL failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let path = root.join("idl/skilltrial.json");
    if check {
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed == json {
            println!("{} is up to date", path.display());
            ExitCode::SUCCESS
        } else {
            eprintln!(
                "{} is stale or missing: run scripts/idl.sh and commit the result",
                path.display()
            );
            ExitCode::FAILURE
        }
    } else {
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, &json));
        match written {
            Ok(()) => {
                println!("wrote {} ({} bytes)", path.display(), json.len());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("cannot write {}: {e}", path.display());
                ExitCode::FAILURE
            }
        }
    }
}

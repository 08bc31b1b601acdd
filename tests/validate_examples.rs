//! End to end: the example bundles shipped in `fixtures/` validate through the real binary, and a
//! ZIP of them written by a mainstream archiver (the `zip` crate's writer, Deflate, with a
//! top-level folder, timestamps and Unix modes) gets the same digest as the folder. Their digests
//! are pinned here and printed in the README; `demo` runs the embedded copies from any directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::Path;
use std::process::Command;

use skilltrial_e2e::{skilltrial_bin, workspace_root};
use zip::write::SimpleFileOptions;

const EXAMPLES: [&str; 2] = [
    "fixtures/bundles/solana-reader-1.4.2",
    "fixtures/bundles/solana-reader-1.5.0",
];

/// The example bundles' digests, as the README's quickstart prints them. A change to an example
/// must change these, the README and the embedded copies together.
const PINNED_DIGESTS: [&str; 2] = [
    "sha256:3f33272d8c1370672313d5bb38e9516c2b34f2c27277787680fcf24d81df38db",
    "sha256:bd7401beb0be836ddfe94d234e3d81b8d7d184fc795e31e650c585de5758540e",
];

fn validate_json(args: &[&str], home: &Path) -> (i32, serde_json::Value) {
    let out = Command::new(skilltrial_bin().unwrap())
        .arg("validate")
        .arg("--json")
        .args(args)
        .current_dir(workspace_root())
        .env("SKILLTRIAL_HOME", home)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}

fn zip_folder(folder: &Path, root_name: &str, out: &Path) {
    let mut writer = zip::ZipWriter::new(std::fs::File::create(out).unwrap());
    let mut stack = vec![folder.to_path_buf()];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files.reverse(); // a different order than the folder walk: order must not matter
    for (i, path) in files.iter().enumerate() {
        let rel = path.strip_prefix(folder).unwrap().to_str().unwrap();
        let options = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(if i % 2 == 0 { 0o644 } else { 0o600 });
        writer
            .start_file(format!("{root_name}/{rel}"), options)
            .unwrap();
        writer.write_all(&std::fs::read(path).unwrap()).unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn example_bundles_validate_and_zip_digest_equals_folder_digest() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");

    // Given the two example folders, and ZIPs of them made by a real archiver
    let mut zips = Vec::new();
    for example in EXAMPLES {
        let folder = workspace_root().join(example);
        let name = folder.file_name().unwrap().to_str().unwrap().to_owned();
        let zip_path = tmp.path().join(format!("{name}.zip"));
        zip_folder(&folder, &name, &zip_path);
        zips.push(zip_path);
    }

    // When all four are validated in one call
    let zip_args: Vec<&str> = zips.iter().map(|p| p.to_str().unwrap()).collect();
    let args: Vec<&str> = EXAMPLES.iter().copied().chain(zip_args).collect();
    let (code, doc) = validate_json(&args, &home);

    // Then all are accepted, each ZIP's digest equals its folder's, and both are the pinned ones
    assert_eq!(code, 0, "{doc}");
    let bundles = doc["bundles"].as_array().unwrap();
    assert_eq!(bundles.len(), 4);
    for i in 0..2 {
        assert_eq!(bundles[i]["ok"], true);
        assert_eq!(bundles[i]["source"], "folder");
        assert_eq!(bundles[i + 2]["source"], "zip");
        assert_eq!(
            bundles[i]["digest"],
            bundles[i + 2]["digest"],
            "folder and ZIP digests differ"
        );
        assert_eq!(bundles[i]["digest"], PINNED_DIGESTS[i]);
        assert_eq!(bundles[i]["name"], "solana-reader");
    }
    assert_eq!(bundles[0]["version"], "1.4.2");
    assert_eq!(bundles[1]["version"], "1.5.0");
    assert!(!home.exists(), "validate wrote a state directory");
}

#[test]
fn readme_prints_the_pinned_digests() {
    // Given the README a new user reads first
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();

    // Then the digests its quickstart shows are the examples' real ones
    for digest in PINNED_DIGESTS {
        assert!(readme.contains(digest), "README.md does not show {digest}");
    }
}

#[test]
fn embedded_example_bundles_equal_the_folders() {
    // Given the example bundles built into the binary, and the folders they came from
    for (i, example) in EXAMPLES.iter().enumerate() {
        let name = Path::new(example).file_name().unwrap().to_str().unwrap();
        let embedded = skilltrial_core::bundle::examples::example_bundle(name).unwrap();
        let folder = skilltrial_core::bundle::import(&workspace_root().join(example)).unwrap();

        // Then both have the pinned digest and the same files
        assert_eq!(embedded.digest.to_string(), PINNED_DIGESTS[i], "{name}");
        assert_eq!(folder.digest.to_string(), PINNED_DIGESTS[i], "{name}");
        let paths = |b: &skilltrial_core::bundle::Bundle| {
            b.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>()
        };
        assert_eq!(paths(&embedded), paths(&folder), "{name}");
    }
    let missing = skilltrial_core::bundle::examples::example_bundle("no-such-example").unwrap_err();
    assert_eq!(
        missing.to_string(),
        "bundle (built-in example) no-such-example rejected: not_found: no example bundle `no-such-example` is built into this binary"
    );
}

#[test]
fn demo_runs_from_a_directory_outside_the_repository() {
    // Given an empty working directory outside the repository and no model key
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("elsewhere");
    std::fs::create_dir(&cwd).unwrap();
    assert!(!cwd.starts_with(workspace_root()));

    // When the real binary's demo runs there on its embedded defaults
    let out = Command::new(skilltrial_bin().unwrap())
        .args(["--json", "demo", "--scripted", "--reps", "1", "--out"])
        .arg(tmp.path().join("out"))
        .current_dir(&cwd)
        .env("SKILLTRIAL_HOME", tmp.path().join("home"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();

    // Then it succeeds, and the run it reports used the two example bundles, by their digests
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["scripted"], true, "{doc}");
    assert_eq!(doc["status"], "finished", "{doc}");
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(doc["json"].as_str().expect("a report.json path")).unwrap(),
    )
    .unwrap();
    let arms = report["manifest"]["arms"].as_array().unwrap();
    let digests: Vec<&str> = arms
        .iter()
        .map(|a| a["bundle"]["digest"].as_str().unwrap_or("none"))
        .collect();
    assert_eq!(digests, ["none", PINNED_DIGESTS[0], PINNED_DIGESTS[1]]);
}

//! Bundle import benchmark: prints wall time and peak memory, asserts nothing.
//!
//! Scenarios (targets: < 50 ms and < 32 MiB peak RSS each; memory must not grow with what a bomb
//! claims):
//! - a valid 5 MiB / 100-file bundle, as a ZIP and as a folder;
//! - a bomb that would inflate to 1 GiB, with honest headers and with headers claiming 1 KiB.
//!
//! Each scenario runs in a fresh child process so that its peak RSS (VmHWM) is its own. Peak
//! RSS is read from `/proc/self/status`, so it is shown only on Linux ("n/a" elsewhere).
//!
//! Every input is written just before it is imported, and each child imports it
//! `ITERATIONS` times: the figures are **warm page cache** figures (file data already in
//! memory), not cold reads from disk. A failed child makes the bench exit non-zero.
//! Run: `cargo bench -p skilltrial-runner --bench bundle`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

#[path = "../tests/support/rawzip.rs"]
mod rawzip;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rawzip::{Entry, build, skill_md};
use skilltrial_core::bundle::import;

const ITERATIONS: usize = 15;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--child") {
        child(Path::new(&args[at + 1]));
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let scenarios = prepare(work.path());
    println!(
        "bundle import: median and best of {ITERATIONS} runs, peak RSS of a fresh process per scenario"
    );
    println!("warm page cache: every input was just written, and is read {ITERATIONS} times");
    println!("targets: < 50 ms and < 32 MiB peak RSS each\n");
    println!(
        "{:<44} {:>10} {:<22} {:>9} {:>9} {:>12} {:>12}",
        "scenario", "input", "result", "median", "best", "RSS before", "peak RSS"
    );
    let mut failed = 0;
    for (label, path, input_bytes) in scenarios {
        let out = Command::new(std::env::current_exe().unwrap())
            .arg("--child")
            .arg(&path)
            .output()
            .unwrap();
        let line = String::from_utf8_lossy(&out.stdout);
        let fields: Vec<&str> = line.trim().split('\t').collect();
        if !out.status.success() || fields.len() != 5 {
            println!(
                "{label}: child failed ({}): {line} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            failed += 1;
            continue;
        }
        println!(
            "{:<44} {:>10} {:<22} {:>9} {:>9} {:>12} {:>12}",
            label,
            mib(input_bytes),
            fields[0],
            format!("{} ms", fields[1]),
            format!("{} ms", fields[2]),
            fields[3],
            fields[4],
        );
    }
    if failed > 0 {
        println!("{failed} scenario(s) failed");
        std::process::exit(1);
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Builds every input on disk before any measurement.
fn prepare(dir: &Path) -> Vec<(String, PathBuf, u64)> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut noise = |len: usize| -> Vec<u8> {
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect()
    };
    // 1 SKILL.md + 29 references of 30 KiB text + 70 incompressible binaries of 58 KiB = 100
    // files, ~4.9 MiB stored: as big as a valid bundle gets.
    let mut files: Vec<(String, Vec<u8>)> =
        vec![("SKILL.md".into(), skill_md("bench", "1.0.0").into_bytes())];
    for i in 0..29 {
        let line = format!(
            "Line {i}: the mint authority is a COption; read the four-byte tag before the key.\n"
        );
        let text: String = line.repeat(30 * 1024 / line.len());
        files.push((format!("references/ref-{i:02}.md"), text.into_bytes()));
    }
    for i in 0..70 {
        let mut blob = noise(58 * 1024);
        blob[0] = 0x89; // not text, not an archive
        files.push((format!("assets/blob-{i:02}.bin"), blob));
    }
    let zip = build(
        &files
            .iter()
            .map(|(p, b)| Entry::stored(p, b))
            .collect::<Vec<_>>(),
    );
    let zip_path = dir.join("valid.zip");
    std::fs::write(&zip_path, &zip).unwrap();
    let folder = dir.join("valid");
    for (p, b) in &files {
        let full = folder.join(p);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, b).unwrap();
    }
    let folder_bytes: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();

    let skill = Entry::deflated("SKILL.md", skill_md("bomb", "1.0.0").as_bytes());
    let gib = 1024 * 1024 * 1024;
    let honest = Entry::deflated_zeros("references/bomb.md", gib);
    let lying = honest.clone().claiming(1024);
    let honest_zip = build(&[skill.clone(), honest]);
    let lying_zip = build(&[skill, lying]);
    let honest_path = dir.join("bomb-honest.zip");
    let lying_path = dir.join("bomb-lying.zip");
    std::fs::write(&honest_path, &honest_zip).unwrap();
    std::fs::write(&lying_path, &lying_zip).unwrap();

    vec![
        (
            format!("valid ZIP, {} files", files.len()),
            zip_path,
            zip.len() as u64,
        ),
        (
            format!("valid folder, {} files (warm cache)", files.len()),
            folder,
            folder_bytes,
        ),
        (
            "bomb to 1 GiB, headers claim 1 GiB".into(),
            honest_path,
            honest_zip.len() as u64,
        ),
        (
            "bomb to 1 GiB, headers claim 1 KiB".into(),
            lying_path,
            lying_zip.len() as u64,
        ),
    ]
}

/// In the child: import `path` repeatedly, print `result \t median_ms \t best_ms \t rss_before
/// \t peak_rss` (each RSS as `12.3 MiB`, or `n/a` where it cannot be read).
fn child(path: &Path) {
    let before = vm_hwm_kib();
    let mut times = Vec::with_capacity(ITERATIONS);
    let mut result = String::new();
    for _ in 0..ITERATIONS {
        let start = Instant::now();
        let outcome = import(path);
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        result = match outcome {
            Ok(b) => format!("ok ({} files)", b.files.len()),
            Err(r) => r.errors[0].code.to_string(),
        };
    }
    times.sort_by(f64::total_cmp);
    let peak = vm_hwm_kib();
    let shown = |kib: Option<u64>| {
        kib.map_or("n/a".to_owned(), |k| {
            format!("{:.1} MiB", k as f64 / 1024.0)
        })
    };
    println!(
        "{result}\t{:.2}\t{:.2}\t{}\t{}",
        times[times.len() / 2],
        times[0],
        shown(before),
        shown(peak)
    );
}

/// Peak resident set size of this process, from /proc (Linux); `None` where there is no such
/// file, rather than a misleading 0.
fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

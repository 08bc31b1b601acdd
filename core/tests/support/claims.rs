//! The claims a `pack verify` report failed, one line each, for test messages.

use skilltrial_core::pack::VerifyReport;

/// `task check: message` for every failed claim (empty when the pack verifies).
pub fn failed(report: &VerifyReport) -> Vec<String> {
    report
        .items
        .iter()
        .filter(|i| !i.ok)
        .map(|i| format!("{} {}: {}", i.task, i.check, i.message))
        .collect()
}

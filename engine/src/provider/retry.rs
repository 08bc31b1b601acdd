//! Automatic retries of rate-limited and overloaded answers.
//!
//! A 429 (rate limited), a 529 (overloaded) or an error body whose type says `rate_limit_error`
//! or `overloaded_error` means the provider turned the request away before the model saw it:
//! nothing was spent, so sending it again cannot double a cost. Such an answer gets at most
//! [`MAX_AUTO_RETRIES`] automatic retries per trial, each a new attempt with its own id and a
//! visible reason, after a wait that honours the provider's `retry-after` (capped at
//! [`MAX_WAIT`]). After the last one the trial stays `infrastructure_error`, and
//! `skilltrial resolve --retry` may retry it by hand.
//!
//! Timeouts and cut connections are not rejections: the model may have run and billed. They stay
//! `unknown` and are never retried automatically (docs/runs.md).

use std::time::Duration;

pub use skilltrial_core::manifest::MAX_AUTO_RETRIES;

/// The longest wait between two attempts, whatever `retry-after` says.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// The wait when the provider gives none: 1 s, 2 s, 4 s for retries 1, 2, 3.
pub fn default_wait(retry: u32) -> Duration {
    Duration::from_secs(1u64 << retry.saturating_sub(1).min(5))
}

/// The prefix of every automatic retry's reason in the journal.
pub const AUTO_REASON_PREFIX: &str = "automatic retry";

/// Test knob: `SKILLTRIAL_TEST_BACKOFF_SCALE` multiplies every wait (a number in `[0, 1]`), so a
/// test can check that `retry-after` is honoured without waiting whole seconds. Unset means 1;
/// release builds ignore it.
pub const BACKOFF_SCALE_ENV: &str = "SKILLTRIAL_TEST_BACKOFF_SCALE";

/// Whether a rejection is one that is retried automatically: rate limited or overloaded. An
/// exhausted quota (OpenAI's 429 `insufficient_quota`) does not pass by waiting, so it is not.
pub fn is_retryable(status: u16, body: &str) -> bool {
    if body.contains("\"insufficient_quota\"") {
        return false;
    }
    matches!(status, 429 | 529)
        || body.contains("\"rate_limit_error\"")
        || body.contains("\"overloaded_error\"")
}

/// Whether a rejection says the key (or the account behind it) is refused, not the request: HTTP
/// 401, 402 or 403, an `authentication_error`, `permission_error` or `billing_error` body, or an
/// account out of money (OpenAI's `insufficient_quota`; Anthropic's 400 "Your credit balance is
/// too low"). Every later request with the same key would be refused alike, so a run that is told
/// to (the hosted runner's, whose key is the operator's) stops on it instead of closing trial
/// after trial.
pub fn is_key_refusal(status: u16, body: &str) -> bool {
    matches!(status, 401..=403)
        || [
            "\"authentication_error\"",
            "\"permission_error\"",
            "\"billing_error\"",
            "\"insufficient_quota\"",
            "credit balance is too low",
        ]
        .iter()
        .any(|sign| body.contains(sign))
}

/// The wait before retry number `retry` (1-based): the provider's, capped, else the default.
pub fn wait(retry: u32, retry_after: Option<Duration>) -> Duration {
    retry_after
        .unwrap_or_else(|| default_wait(retry))
        .min(MAX_WAIT)
}

/// Reads `retry-after-ms` (OpenAI) or `retry-after` (seconds, possibly fractional). An HTTP
/// date or anything unparsable counts as not given.
pub fn parse_retry_after(ms: Option<&str>, seconds: Option<&str>) -> Option<Duration> {
    if let Some(ms) = ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(86_400.0)));
    }
    let secs = seconds.and_then(|v| v.trim().parse::<f64>().ok())?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// The backoff scale from [`BACKOFF_SCALE_ENV`].
///
/// # Errors
/// When it is set to anything but a number from 0 to 1.
pub fn backoff_scale() -> Result<f64, String> {
    // Like the engine's other test knobs, read only in debug builds: a release build always
    // waits what the provider asks.
    if !cfg!(debug_assertions) {
        return Ok(1.0);
    }
    match std::env::var(BACKOFF_SCALE_ENV) {
        Err(_) => Ok(1.0),
        Ok(text) => match text.trim().parse::<f64>() {
            Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
            _ => Err(format!(
                "{BACKOFF_SCALE_ENV}=`{text}` is not a number from 0 to 1 (it scales retry waits in tests)"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_account_without_money_or_a_bad_key_is_a_key_refusal_and_a_bad_request_is_not() {
        // Anthropic's answer to an account out of credit: a 400 like any malformed request.
        let credit = r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}"#;
        assert!(is_key_refusal(400, credit));
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert!(is_key_refusal(429, quota) && !is_retryable(429, quota));
        assert!(is_key_refusal(401, ""));
        assert!(is_key_refusal(402, ""));
        assert!(is_key_refusal(403, ""));
        let bad = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be at most 8192"}}"#;
        assert!(!is_key_refusal(400, bad));
        assert!(!is_key_refusal(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error"}}"#
        ));
    }

    #[test]
    fn retry_after_is_read_in_both_spellings_and_capped() {
        assert_eq!(
            parse_retry_after(None, Some("2")),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            parse_retry_after(Some("1500"), Some("9")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after(None, Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            None
        );
        assert_eq!(parse_retry_after(None, Some("-1")), None);
        assert_eq!(wait(1, Some(Duration::from_secs(600))), MAX_WAIT);
        assert_eq!(wait(1, None), Duration::from_secs(1));
        assert_eq!(wait(3, None), Duration::from_secs(4));
    }

    #[test]
    fn only_rate_limits_and_overload_are_retried() {
        assert!(is_retryable(429, ""));
        assert!(is_retryable(529, ""));
        assert!(is_retryable(
            503,
            "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"
        ));
        assert!(!is_retryable(503, "{\"error\":{\"type\":\"api_error\"}}"));
        assert!(!is_retryable(400, ""));
        assert!(!is_retryable(
            429,
            "{\"error\":{\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}"
        ));
        assert!(!is_retryable(
            401,
            "{\"error\":{\"type\":\"authentication_error\"}}"
        ));
    }
}

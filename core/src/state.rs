//! The states the journal stores as text: a run's status, an attempt's state, why a trial was
//! not run, a ledger row's kind and a payload's kind.
//!
//! Each enum's text (`as_str`, `Display`, `FromStr`, serde) is exactly what the journal's SQL
//! `CHECK` constraints admit and what `status`, `report` and the JSON outputs print: changing one
//! is a schema change (a new migration) and a change of every output that shows it. Unknown text
//! is an error, never a default: a journal written by a newer SkillTrial must not be misread.
//! Attempt outcomes are [`crate::outcome::Outcome`].

/// Text that names none of an enum's states.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{text}`")]
pub struct UnknownState {
    /// Which kind of state was read (`run status`, `attempt state`, ...).
    pub what: &'static str,
    /// The text, as read.
    pub text: String,
}

/// An enum stored as text: its variants, their text, `Display`, `FromStr` and serde as that
/// same text, so the four can never disagree.
macro_rules! text_enum {
    (
        $(#[$meta:meta])*
        $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident => $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The stable snake_case text, as stored and printed.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownState;

            fn from_str(text: &str) -> Result<Self, UnknownState> {
                match text {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(UnknownState {
                        what: $what,
                        text: text.to_owned(),
                    }),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        // Documented as the strings it is written as (docs/json.md).
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "enum": [$($text),+] })
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

text_enum! {
    /// A run's status.
    RunStatus("run status") {
        /// Recorded by `plan` or `run`; nothing sent yet.
        Planned => "planned",
        /// A `run` is executing it, or was when it was killed (see [`RunStatus::Interrupted`]).
        Running => "running",
        /// Every trial has its outcome.
        Finished => "finished",
        /// Cancelled: it never sends again.
        Cancelled => "cancelled",
        /// Stopped by the user (Ctrl-C, `--max-dispatch`); a later `run` continues it.
        Stopped => "stopped",
        /// Never stored: what readers (`status`, `report`) call a `running` run whose process is
        /// gone (killed or crashed), told apart by the run's lock being free.
        Interrupted => "interrupted",
    }
}

impl RunStatus {
    /// Whether this status ends an invocation of `run`: its finish time is recorded with it.
    pub fn is_end(self) -> bool {
        matches!(self, Self::Finished | Self::Cancelled | Self::Stopped)
    }
}

text_enum! {
    /// An attempt's state: `planned` → `dispatched` → `result` | `unknown`; `closed` is terminal
    /// for attempts that end without a model result (infrastructure error, not run, or resolved
    /// by the user).
    AttemptState("attempt state") {
        Planned => "planned",
        Dispatched => "dispatched",
        Result => "result",
        Unknown => "unknown",
        Closed => "closed",
    }
}

text_enum! {
    /// Why a trial was not run: the first (and only) reason of its `not_run` attempt.
    NotRunReason("not-run reason") {
        /// Its upper cost could break the money cap, or its token bound the token cap.
        Budget => "not_run_budget",
        /// The run reached its time limit.
        TimeLimit => "not_run_time_limit",
        /// The run reached its request cap.
        RequestCap => "not_run_request_cap",
        /// The run was cancelled before the trial was sent.
        Cancelled => "cancelled",
        /// The runner cannot call the run's model at all (a hosted run whose profile its daemon
        /// no longer serves: no key, the profile gone, its provider not buildable).
        ModelUnavailable => "not_run_model_unavailable",
    }
}

text_enum! {
    /// A ledger row's kind. Outstanding reserve = Σ reserve − Σ release; spent = Σ spend.
    LedgerKind("ledger kind") {
        Reserve => "reserve",
        Release => "release",
        Spend => "spend",
    }
}

text_enum! {
    /// What a stored payload blob is.
    PayloadKind("payload kind") {
        /// The request body as sent.
        Request => "request",
        /// The provider's response body.
        Response => "response",
        /// The answer text extracted from the response.
        Answer => "answer",
    }
}

/// The first 12 characters of an id (a run's manifest hash), as people and attempt ids see it.
pub fn short_id(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn round_trips<T>(all: &[T])
    where
        T: Copy + PartialEq + std::fmt::Debug + std::fmt::Display + std::str::FromStr,
        T: serde::Serialize + serde::de::DeserializeOwned,
        <T as std::str::FromStr>::Err: std::fmt::Debug,
    {
        for &v in all {
            let text = v.to_string();
            assert_eq!(text.parse::<T>().unwrap(), v);
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{text}\""));
            assert_eq!(
                serde_json::from_str::<T>(&format!("\"{text}\"")).unwrap(),
                v
            );
        }
    }

    #[test]
    fn every_state_round_trips_through_its_text_and_serde() {
        round_trips(RunStatus::ALL);
        round_trips(AttemptState::ALL);
        round_trips(NotRunReason::ALL);
        round_trips(LedgerKind::ALL);
        round_trips(PayloadKind::ALL);
    }

    #[test]
    fn the_texts_are_the_ones_the_journal_and_the_outputs_have_always_used() {
        let texts = |all: &[&'static str]| all.join(",");
        assert_eq!(
            texts(
                &RunStatus::ALL
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
            ),
            "planned,running,finished,cancelled,stopped,interrupted"
        );
        assert_eq!(
            texts(
                &AttemptState::ALL
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
            ),
            "planned,dispatched,result,unknown,closed"
        );
        assert_eq!(
            texts(
                &NotRunReason::ALL
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
            ),
            "not_run_budget,not_run_time_limit,not_run_request_cap,cancelled,not_run_model_unavailable"
        );
        assert_eq!(
            texts(
                &LedgerKind::ALL
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
            ),
            "reserve,release,spend"
        );
        assert_eq!(
            texts(
                &PayloadKind::ALL
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
            ),
            "request,response,answer"
        );
    }

    /// Regression: `AttemptState::parse` used to read any unknown text as `closed`.
    #[test]
    fn unknown_text_is_an_error_naming_it_not_a_default() {
        let err = "exploded".parse::<AttemptState>().unwrap_err();
        assert_eq!(err.to_string(), "unknown attempt state `exploded`");
        assert!("Closed".parse::<AttemptState>().is_err(), "case matters");
        assert!("".parse::<RunStatus>().is_err());
        assert!(serde_json::from_str::<LedgerKind>("\"refund\"").is_err());
    }

    #[test]
    fn only_finished_cancelled_and_stopped_end_an_invocation() {
        let ends: Vec<_> = RunStatus::ALL.iter().filter(|s| s.is_end()).collect();
        assert_eq!(
            ends,
            [
                &RunStatus::Finished,
                &RunStatus::Cancelled,
                &RunStatus::Stopped
            ]
        );
    }

    #[test]
    fn short_id_is_the_first_twelve_characters_or_the_whole_id() {
        assert_eq!(short_id(&"ab".repeat(32)), "abababababab");
        assert_eq!(short_id("abc"), "abc");
        // Not a char boundary at 12: the whole id, never a panic.
        assert_eq!(short_id("aéééééé"), "aéééééé");
    }
}

//! Admission: whether the next trial may be sent, decided before every dispatch from the run's
//! money, its budget and its limits as they stand. Pure (no journal, no clock, no I/O), so every
//! rule is unit-tested on its own; the engine gathers [`LimitsNow`] and acts on the answer.
//!
//! The rules are checked in this order, and the order is part of the behaviour: a cancel wins
//! over everything; then the run's time limit; then its request cap; then a stop of this
//! invocation (Ctrl-C, `--max-dispatch`), which pauses rather than closes the trial; then the
//! money cap (the trial's whole upper cost must fit beside what is spent and reserved; for a retry
//! of a progressive trial's later turn, the cost of the turns it may still send); then the token
//! cap.

use skilltrial_core::manifest::{Budget, PlannedTrial};
use skilltrial_core::money::MicroUsd;

use crate::journal::{Money, NotRunReason};

/// The run's limits at the moment of a dispatch, gathered by the engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitsNow {
    /// A cancel is recorded in the journal.
    pub cancel_requested: bool,
    /// The time the run has executed, over all its invocations (ms).
    pub executed_ms: u64,
    /// The run's time limit (ms).
    pub limit_ms: u64,
    /// Requests the run has sent, over all its invocations.
    pub sent: u32,
    /// This invocation was asked to stop (Ctrl-C / SIGTERM) or reached its `--max-dispatch`.
    pub stop_requested: bool,
    /// Requests the trials in progress may still send: the later turns of progressive trials
    /// already admitted (0 inline).
    pub requests_held: u32,
    /// The trial is a progressive trial's next turn that already holds its reserve: its caps
    /// were checked when the trial was admitted, so only a cancel, the time limit or a stop
    /// apply.
    pub held: bool,
    /// The turn the trial is sent from: 1 (or 0) for a new trial and every inline one; k for a
    /// retry of a progressive trial's turn k, whose earlier turns are answered and spent. Its
    /// caps are checked for turns k to K only: the requests, money and tokens it may still use.
    pub from_turn: u32,
}

/// What to do with the next trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Reserve its upper cost and send it.
    Send,
    /// Close it without sending, for this reason, with this message for people.
    NotRun(NotRunReason, String),
    /// Send nothing more in this invocation; the trial stays pending, the run resumable.
    Pause,
}

/// Decides whether `trial` may be sent now. See the module docs for the order of the rules.
pub fn admit(trial: &PlannedTrial, money: &Money, budget: &Budget, now: &LimitsNow) -> Admission {
    let from = now.from_turn.max(1);
    // The requests the trial may still send, from its turn on.
    let turns_left = trial.max_turns().saturating_sub(from - 1).max(1);
    if now.cancel_requested {
        return Admission::NotRun(
            NotRunReason::Cancelled,
            "the run was cancelled before this trial was sent".to_owned(),
        );
    }
    if now.executed_ms > now.limit_ms {
        return Admission::NotRun(
            NotRunReason::TimeLimit,
            "the run reached its time limit".to_owned(),
        );
    }
    if !now.held
        && now
            .sent
            .saturating_add(now.requests_held)
            .saturating_add(turns_left)
            > budget.max_requests
    {
        return Admission::NotRun(
            NotRunReason::RequestCap,
            if turns_left == 1 {
                "the run reached its request cap".to_owned()
            } else {
                format!(
                    "its {} turns could break the request cap {}: sent {}, held for trials in progress {}",
                    turns_left, budget.max_requests, now.sent, now.requests_held
                )
            },
        );
    }
    if now.stop_requested {
        return Admission::Pause;
    }
    if now.held {
        return Admission::Send;
    }
    if let Some(cap) = budget.cap_usd_micros {
        // The upper cost from its turn on: the whole trial's for a first turn. A bound that
        // cannot be computed is over any cap.
        let upper = if from > 1 {
            trial.reserve_from(budget.price.as_ref(), from).ok()
        } else {
            Some(trial.reserve)
        };
        let committed = upper.and_then(|upper| {
            money
                .spent
                .checked_add(money.reserved)
                .and_then(|c| c.checked_add(upper))
                .ok()
        });
        // An overflow is over any cap.
        if committed.is_none_or(|c| c.0 > cap) {
            return Admission::NotRun(
                NotRunReason::Budget,
                format!(
                    "its upper cost {} could break the cap {}: spent {}, reserved {}",
                    upper.unwrap_or(trial.reserve),
                    MicroUsd(cap),
                    money.spent,
                    money.reserved
                ),
            );
        }
    }
    if let Some(max_tokens) = budget.max_tokens
        && money
            .used_tokens
            .saturating_add(money.reserved_tokens)
            .saturating_add(trial.tokens_from(from))
            > max_tokens
    {
        return Admission::NotRun(
            NotRunReason::Budget,
            "its token bound could break the token cap".to_owned(),
        );
    }
    Admission::Send
}

#[cfg(test)]
mod tests {
    use super::*;
    use skilltrial_core::manifest::Arm;

    fn trial(reserve: u64) -> PlannedTrial {
        PlannedTrial {
            index: 0,
            task: "t".into(),
            arm: Arm::A,
            repetition: 1,
            input_token_bound: 100,
            max_output_tokens: 50,
            reserve: MicroUsd(reserve),
            turns: None,
        }
    }

    fn budget() -> Budget {
        Budget {
            cap_usd_micros: Some(1_000),
            price: None,
            max_requests: 10,
            max_tokens: Some(1_000),
            requires_confirmation: false,
        }
    }

    fn now() -> LimitsNow {
        LimitsNow {
            limit_ms: 60_000,
            ..LimitsNow::default()
        }
    }

    fn reason(a: &Admission) -> Option<NotRunReason> {
        match a {
            Admission::NotRun(r, _) => Some(*r),
            _ => None,
        }
    }

    #[test]
    fn a_trial_within_every_limit_is_sent() {
        assert_eq!(
            admit(&trial(100), &Money::default(), &budget(), &now()),
            Admission::Send
        );
    }

    #[test]
    fn a_cancel_closes_the_trial_before_any_other_rule() {
        // Given a run that is cancelled AND over its time limit, request cap and money cap.
        let limits = LimitsNow {
            cancel_requested: true,
            executed_ms: 120_000,
            sent: 10,
            stop_requested: true,
            ..now()
        };
        let a = admit(&trial(5_000), &Money::default(), &budget(), &limits);
        assert_eq!(reason(&a), Some(NotRunReason::Cancelled));
    }

    #[test]
    fn the_time_limit_closes_the_trial_only_once_exceeded() {
        let at = LimitsNow {
            executed_ms: 60_000,
            ..now()
        };
        assert_eq!(
            admit(&trial(1), &Money::default(), &budget(), &at),
            Admission::Send
        );
        let past = LimitsNow {
            executed_ms: 60_001,
            ..now()
        };
        let a = admit(&trial(1), &Money::default(), &budget(), &past);
        assert_eq!(reason(&a), Some(NotRunReason::TimeLimit));
        assert_eq!(
            NotRunReason::TimeLimit.as_str(),
            "not_run_time_limit",
            "the journal's reason code"
        );
    }

    #[test]
    fn the_request_cap_closes_the_trial_once_reached() {
        let below = LimitsNow { sent: 9, ..now() };
        assert_eq!(
            admit(&trial(1), &Money::default(), &budget(), &below),
            Admission::Send
        );
        let reached = LimitsNow { sent: 10, ..now() };
        let a = admit(&trial(1), &Money::default(), &budget(), &reached);
        assert_eq!(reason(&a), Some(NotRunReason::RequestCap));
        assert_eq!(NotRunReason::RequestCap.as_str(), "not_run_request_cap");
    }

    #[test]
    fn a_progressive_trial_needs_room_for_all_its_turns_beside_the_turns_held() {
        let mut four = trial(1);
        four.turns = Some(skilltrial_core::delivery::TurnBounds {
            first_input: 10,
            step: 10,
            turns: 4,
        });
        // 3 sent + 3 held by trials in progress + 4 = 10: exactly the cap fits.
        let fits = LimitsNow {
            sent: 3,
            requests_held: 3,
            ..now()
        };
        assert_eq!(
            admit(&four, &Money::default(), &budget(), &fits),
            Admission::Send
        );
        let over = LimitsNow {
            requests_held: 4,
            ..fits
        };
        let a = admit(&four, &Money::default(), &budget(), &over);
        assert_eq!(reason(&a), Some(NotRunReason::RequestCap));
    }

    #[test]
    fn a_retry_of_a_later_turn_needs_room_only_for_the_turns_it_may_still_send() {
        let price = skilltrial_core::profile::Price {
            input: skilltrial_core::money::PerMtok(1_000_000),
            output: skilltrial_core::money::PerMtok(1_000_000),
            source: "test".into(),
            as_of: "2026-12-04".into(),
            cache: None,
        };
        let mut four = trial(0);
        four.turns = Some(skilltrial_core::delivery::TurnBounds {
            first_input: 100,
            step: 100,
            turns: 4,
        });
        four.reserve = four.reserve_from(Some(&price), 1).unwrap();
        let from_three = four.reserve_from(Some(&price), 3).unwrap();
        assert!(from_three < four.reserve);
        let budget = Budget {
            price: Some(price),
            cap_usd_micros: Some(from_three.0),
            max_tokens: Some(four.tokens_from(3)),
            max_requests: 7,
            ..budget()
        };
        // 5 sent: the whole trial (4 turns, its whole cost and tokens) does not fit ...
        let first = LimitsNow { sent: 5, ..now() };
        assert_eq!(
            reason(&admit(&four, &Money::default(), &budget, &first)),
            Some(NotRunReason::RequestCap)
        );
        let first = LimitsNow { sent: 3, ..now() };
        assert_eq!(
            reason(&admit(&four, &Money::default(), &budget, &first)),
            Some(NotRunReason::Budget)
        );
        // ... its retry from turn 3 (turns 3 and 4 left) fits exactly, in requests, money and
        // tokens;
        let retry = LimitsNow {
            sent: 5,
            from_turn: 3,
            ..now()
        };
        assert_eq!(
            admit(&four, &Money::default(), &budget, &retry),
            Admission::Send
        );
        // and one request, one µUSD or one token more does not.
        let busier = LimitsNow { sent: 6, ..retry };
        assert_eq!(
            reason(&admit(&four, &Money::default(), &budget, &busier)),
            Some(NotRunReason::RequestCap)
        );
        let spent = Money {
            spent: MicroUsd(1),
            ..Money::default()
        };
        assert_eq!(
            reason(&admit(&four, &spent, &budget, &retry)),
            Some(NotRunReason::Budget)
        );
        let used = Money {
            used_tokens: 1,
            ..Money::default()
        };
        assert_eq!(
            reason(&admit(&four, &used, &budget, &retry)),
            Some(NotRunReason::Budget)
        );
    }

    #[test]
    fn a_turn_that_holds_its_reserve_is_stopped_only_by_a_cancel_the_time_limit_or_a_stop() {
        // Over the request cap and the money cap, the held turn of an admitted trial goes.
        let money = Money {
            spent: MicroUsd(1_000),
            reserved: MicroUsd(900),
            ..Money::default()
        };
        let held = LimitsNow {
            sent: 10,
            held: true,
            ..now()
        };
        assert_eq!(
            admit(&trial(500), &money, &budget(), &held),
            Admission::Send
        );
        let stop = LimitsNow {
            stop_requested: true,
            ..held
        };
        assert_eq!(
            admit(&trial(500), &money, &budget(), &stop),
            Admission::Pause
        );
        let cancel = LimitsNow {
            cancel_requested: true,
            ..held
        };
        assert_eq!(
            reason(&admit(&trial(500), &money, &budget(), &cancel)),
            Some(NotRunReason::Cancelled)
        );
        let late = LimitsNow {
            executed_ms: 60_001,
            ..held
        };
        assert_eq!(
            reason(&admit(&trial(500), &money, &budget(), &late)),
            Some(NotRunReason::TimeLimit)
        );
    }

    #[test]
    fn a_stop_pauses_after_the_closing_rules_and_before_the_caps() {
        // A stop never closes a trial: it stays pending for the next `run`...
        let stop = LimitsNow {
            stop_requested: true,
            ..now()
        };
        assert_eq!(
            admit(&trial(5_000), &Money::default(), &budget(), &stop),
            Admission::Pause,
            "a stop wins over the money cap"
        );
        // ...but a trial the request cap already closes is closed, stop or not.
        let capped = LimitsNow { sent: 10, ..stop };
        assert_eq!(
            reason(&admit(&trial(1), &Money::default(), &budget(), &capped)),
            Some(NotRunReason::RequestCap)
        );
    }

    #[test]
    fn the_money_cap_counts_spent_reserved_and_the_trials_whole_upper_cost() {
        let money = Money {
            spent: MicroUsd(600),
            reserved: MicroUsd(300),
            ..Money::default()
        };
        // 600 + 300 + 100 = 1000: exactly the cap fits.
        assert_eq!(
            admit(&trial(100), &money, &budget(), &now()),
            Admission::Send
        );
        // 600 + 300 + 101 = 1001: one µUSD over.
        let a = admit(&trial(101), &money, &budget(), &now());
        assert_eq!(reason(&a), Some(NotRunReason::Budget));
        let Admission::NotRun(_, message) = a else {
            unreachable!()
        };
        assert!(message.contains("could break the cap"), "{message}");
        // An overflow is over any cap, never a wrap to a small number.
        let huge = Money {
            spent: MicroUsd(u64::MAX),
            ..Money::default()
        };
        let unlimited = Budget {
            cap_usd_micros: Some(u64::MAX),
            ..budget()
        };
        assert_eq!(
            reason(&admit(&trial(1), &huge, &unlimited, &now())),
            Some(NotRunReason::Budget)
        );
        // Without a price there is no money cap to break.
        let no_cap = Budget {
            cap_usd_micros: None,
            ..budget()
        };
        assert_eq!(
            admit(&trial(5_000), &money, &no_cap, &now()),
            Admission::Send
        );
    }

    #[test]
    fn the_token_cap_counts_used_reserved_and_the_trials_bound() {
        let money = Money {
            used_tokens: 700,
            reserved_tokens: 150,
            ..Money::default()
        };
        // 700 + 150 + 150 = 1000: fits.
        assert_eq!(admit(&trial(1), &money, &budget(), &now()), Admission::Send);
        let more = Money {
            used_tokens: 701,
            ..money
        };
        let a = admit(&trial(1), &more, &budget(), &now());
        assert_eq!(
            a,
            Admission::NotRun(
                NotRunReason::Budget,
                "its token bound could break the token cap".to_owned()
            )
        );
        assert_eq!(NotRunReason::Budget.as_str(), "not_run_budget");
    }
}

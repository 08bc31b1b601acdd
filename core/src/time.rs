//! UTC calendar times from Unix time, without a date crate: the days-to-civil conversion of
//! Howard Hinnant's `chrono`-compatible algorithms.

/// Year, month, day, hour, minute, second (UTC) of Unix seconds `secs`.
pub fn civil(secs: i64) -> (i64, i64, i64, i64, i64, i64) {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// RFC 3339 UTC to the second: `2026-11-30T15:02:09Z`.
pub fn rfc3339(secs: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// Unix days of a proleptic Gregorian date (the inverse of [`civil`]'s date part).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Unix seconds of an RFC 3339 / ISO 8601 date-time as wallets write it:
/// `2026-11-30T15:02:09Z`, with optional fractional seconds (dropped) and a `Z` or `±HH:MM`
/// offset. `None` for anything else, including impossible dates.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let days_in = *month_days.get(usize::try_from(month.checked_sub(1)?).ok()?)?;
    if day < 1 || day > days_in || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let o = rest.as_bytes();
            if o.len() != 6 || o[3] != b':' {
                return None;
            }
            let digits = |r: std::ops::Range<usize>| -> Option<i64> {
                let p = rest.get(r)?;
                p.bytes()
                    .all(|c| c.is_ascii_digit())
                    .then(|| p.parse().ok())?
            };
            let (oh, om) = (digits(1..3)?, digits(4..6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            sign * (oh * 3600 + om * 60)
        }
    };
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Some(secs - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_formats_and_what_wallets_write() {
        for secs in [0, 951_782_400, 1_796_000_529, -1, 4_102_444_800] {
            assert_eq!(parse_rfc3339(&rfc3339(secs)), Some(secs));
        }
        assert_eq!(
            parse_rfc3339("2026-11-30T01:02:09.123Z"),
            Some(1_796_000_529)
        );
        assert_eq!(
            parse_rfc3339("2026-11-30T03:02:09+02:00"),
            Some(1_796_000_529)
        );
        assert_eq!(
            parse_rfc3339("2026-11-29T23:02:09-02:00"),
            Some(1_796_000_529)
        );
        for bad in [
            "",
            "2026-11-30",
            "2026-11-30T01:02:09",
            "2026-02-30T01:02:09Z",
            "2026-13-01T01:02:09Z",
            "2026-11-30T24:02:09Z",
            "2026-11-30T01:02:09.Z",
            "2026-11-30T01:02:09+0200",
            "2026-11-30T01:02:09+02:60",
            "+026-11-30T01:02:09Z",
            "2026-11-30T01:02:09Zjunk",
            "２026-11-30T01:02:09Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_000_529), "2026-11-30T01:02:09Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
    }
}

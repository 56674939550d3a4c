//! RFC 3339 timestamps (UTC), the one form every result and run record uses.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;
use time::macros::format_description;

fn utc(t: SystemTime) -> OffsetDateTime {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    OffsetDateTime::UNIX_EPOCH + since
}

/// Now, as RFC 3339 in UTC with second precision (`2026-05-01T12:00:00Z`).
pub fn now_rfc3339() -> String {
    rfc3339(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    )
}

/// Seconds since the Unix epoch as RFC 3339 in UTC (`2026-05-01T12:00:00Z`).
pub fn rfc3339(unix_secs: u64) -> String {
    utc(UNIX_EPOCH + Duration::from_secs(unix_secs))
        .format(format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z"))
        .unwrap_or_default()
}

/// A time as RFC 3339 in UTC with milliseconds (`2026-05-01T12:00:00.123Z`).
pub fn rfc3339_millis(t: SystemTime) -> String {
    utc(t)
        .format(format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
        ))
        .unwrap_or_default()
}

/// Parses an RFC 3339 time (as the functions above write them).
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let t = OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    let nanos = u64::try_from(t.unix_timestamp_nanos()).ok()?;
    Some(UNIX_EPOCH + Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_what_it_writes() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_777_777_777_123);
        assert_eq!(super::parse_rfc3339(&super::rfc3339_millis(t)), Some(t));
        assert_eq!(super::parse_rfc3339("yesterday"), None);
    }

    use super::*;

    #[test]
    fn rfc3339_table() {
        let cases = [
            (0, "1970-01-01T00:00:00Z"),           // the epoch
            (951_782_400, "2000-02-29T00:00:00Z"), // a leap day in a century leap year
            (1_700_000_000, "2023-11-14T22:13:20Z"),
            (4_102_444_799, "2099-12-31T23:59:59Z"), // end of a day
        ];
        for (secs, want) in cases {
            assert_eq!(rfc3339(secs), want);
        }
    }

    #[test]
    fn rfc3339_millis_keeps_three_digits() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(rfc3339_millis(t), "2023-11-14T22:13:20.123Z");
        let whole = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(rfc3339_millis(whole), "2023-11-14T22:13:20.000Z");
    }
}

//! What the paged and filtered reads of every side parse alike: a page's size (`?limit=`), where
//! the next page starts (`?cursor=`, a [`Cursor`] this API gave), and the city and instants a
//! list is filtered by (`?city=`, `?from=`, `?to=`). Each refuses what it cannot take with a
//! `problem+json` naming the parameter.

use chrono::{DateTime, NaiveDate, Utc};
use uuid::Uuid;

use crate::Problem;

/// A page's size from `?limit=`: `default` without it, `bad-limit` unless a whole number from 1
/// to `max`.
pub fn limit(raw: Option<&str>, default: usize, max: usize) -> Result<usize, Problem> {
    let Some(raw) = raw else {
        return Ok(default);
    };
    raw.parse().ok().filter(|n| (1..=max).contains(n)).ok_or_else(|| {
        Problem::bad_request(
            "bad-limit",
            format!("limit={raw:?} is not a whole number from 1 to {max}"),
        )
        .with("parameter", "limit")
    })
}

/// Where a page starts in a list ordered by an instant, then by an id (many items may share the
/// instant): just after the item with these. Its text form, `MICROS.UUID` (microseconds since
/// 1970, the id without hyphens), is what a page's `next` gives and `?cursor=` takes back;
/// opaque to clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cursor {
    pub at: DateTime<Utc>,
    pub id: Uuid,
}

impl Cursor {
    /// The cursor at `at`, to the microsecond its text keeps (so that an item's key and the
    /// cursor read back from a page's `next` compare equal), and `id`.
    pub fn new(at: DateTime<Utc>, id: Uuid) -> Self {
        Self {
            at: DateTime::from_timestamp_micros(at.timestamp_micros()).unwrap_or(at),
            id,
        }
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.at.timestamp_micros(), self.id.simple())
    }
}

impl std::str::FromStr for Cursor {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        let (micros, id) = s.split_once('.').ok_or(())?;
        let micros: i64 = micros.parse().map_err(|_| ())?;
        Ok(Self {
            at: DateTime::from_timestamp_micros(micros).ok_or(())?,
            id: Uuid::try_parse(id).map_err(|_| ())?,
        })
    }
}

/// `?cursor=` read back: `bad-cursor` unless it is a [`Cursor`]'s text; `what` names the list in
/// the detail ("bookings").
pub fn cursor(raw: Option<&str>, what: &str) -> Result<Option<Cursor>, Problem> {
    raw.map(|raw| {
        raw.parse().map_err(|()| {
            Problem::bad_request(
                "bad-cursor",
                format!("cursor={raw:?} is not the `next` of a page of {what}"),
            )
            .with("parameter", "cursor")
        })
    })
    .transpose()
}

/// The longest city filter accepted, in characters.
pub const MAX_CITY_CHARS: usize = 100;

/// `?city=` trimmed: `None` when absent or blank, `city-too-long` (`422`) over
/// [`MAX_CITY_CHARS`] characters.
pub fn city(raw: Option<&str>) -> Result<Option<&str>, Problem> {
    match raw.map(str::trim).filter(|c| !c.is_empty()) {
        Some(c) if c.chars().count() > MAX_CITY_CHARS => Err(Problem::unprocessable(
            "city-too-long",
            format!("the city filter is at most {MAX_CITY_CHARS} characters"),
        )
        .with("parameter", "city")),
        city => Ok(city),
    }
}

/// A filter's instant, `name` the parameter: an RFC 3339 instant, or a day (`YYYY-MM-DD`, UTC)
/// taken as its first second or, with `end_of_day`, its last; `bad-date` otherwise.
pub fn instant(name: &str, raw: &str, end_of_day: bool) -> Result<DateTime<Utc>, Problem> {
    let raw = raw.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(raw) {
        return Ok(at.with_timezone(&Utc));
    }
    if let Ok(day) = NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
        let time = if end_of_day {
            day.and_hms_opt(23, 59, 59)
        } else {
            day.and_hms_opt(0, 0, 0)
        };
        if let Some(time) = time {
            return Ok(time.and_utc());
        }
    }
    Err(Problem::bad_request(
        "bad-date",
        format!("{name}={raw:?} is not a date (YYYY-MM-DD) or an RFC 3339 instant"),
    )
    .with("parameter", name))
}

/// One end of a date range; `None` leaves that end open.
pub type Bound = Option<DateTime<Utc>>;

/// `?from=` and `?to=` read together: each may be absent or blank (no bound); `to` given as a day
/// includes all of it; `bad-date-range` (`422`) when `from` is after `to`.
pub fn date_range(from: Option<&str>, to: Option<&str>) -> Result<(Bound, Bound), Problem> {
    let given = |v: &&str| !v.trim().is_empty();
    let from = from.filter(given).map(|v| instant("from", v, false)).transpose()?;
    let to = to.filter(given).map(|v| instant("to", v, true)).transpose()?;
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
        return Err(Problem::unprocessable(
            "bad-date-range",
            format!("from ({from}) is after to ({to})"),
        ));
    }
    Ok((from, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slug(p: Problem) -> &'static str {
        p.kind
    }

    #[test]
    fn a_limit_is_a_whole_number_in_range() {
        assert_eq!(limit(None, 20, 100).unwrap(), 20);
        assert_eq!(limit(Some("1"), 20, 100).unwrap(), 1);
        assert_eq!(limit(Some("100"), 20, 100).unwrap(), 100);
        for bad in ["0", "101", "ten", "", "-1", "2.5", " 5"] {
            assert_eq!(slug(limit(Some(bad), 20, 100).unwrap_err()), "bad-limit", "{bad:?}");
        }
    }

    #[test]
    fn a_cursor_reads_back_as_itself() {
        let c = Cursor {
            at: DateTime::from_timestamp_micros(1_796_126_400_123_456).unwrap(),
            id: Uuid::from_u128(0x0192_f5c1_a3e4_7d2b_9c1e_5f3a_7b8d_9e01),
        };
        let text = c.to_string();
        assert_eq!(text, "1796126400123456.0192f5c1a3e47d2b9c1e5f3a7b8d9e01");
        assert_eq!(cursor(Some(&text), "events").unwrap(), Some(c));
        assert_eq!(cursor(None, "events").unwrap(), None);
        // Finer than a microsecond: the key is what its text reads back as.
        let fine = Cursor::new(DateTime::from_timestamp(1_796_126_400, 123_456_789).unwrap(), c.id);
        assert_eq!(cursor(Some(&fine.to_string()), "events").unwrap(), Some(fine));
        for bad in [
            "yesterday",
            "1796126400000000",
            "1796126400000000.not-a-uuid",
            ".0192f5c1a3e47d2b9c1e5f3a7b8d9e01",
        ] {
            assert_eq!(slug(cursor(Some(bad), "events").unwrap_err()), "bad-cursor", "{bad:?}");
        }
    }

    #[test]
    fn a_city_is_trimmed_and_bounded() {
        assert_eq!(city(None).unwrap(), None);
        assert_eq!(city(Some("  ")).unwrap(), None);
        assert_eq!(city(Some(" München ")).unwrap(), Some("München"));
        assert_eq!(
            city(Some(&"ü".repeat(MAX_CITY_CHARS)))
                .unwrap()
                .map(|c| c.chars().count()),
            Some(MAX_CITY_CHARS)
        );
        assert_eq!(
            slug(city(Some(&"a".repeat(MAX_CITY_CHARS + 1))).unwrap_err()),
            "city-too-long"
        );
    }

    #[test]
    fn dates_are_days_or_instants() {
        let day = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        assert_eq!(
            instant("from", "2027-02-01", false).unwrap(),
            day("2027-02-01T00:00:00Z")
        );
        assert_eq!(instant("to", "2027-02-01", true).unwrap(), day("2027-02-01T23:59:59Z"));
        assert_eq!(
            instant("from", "2027-02-01T20:00:00+01:00", false).unwrap(),
            day("2027-02-01T19:00:00Z")
        );
        assert_eq!(slug(instant("from", "tomorrow", false).unwrap_err()), "bad-date");
        assert_eq!(slug(instant("to", "2027-02-30", true).unwrap_err()), "bad-date");
    }

    #[test]
    fn a_range_may_be_open_but_not_inverted() {
        assert_eq!(date_range(None, Some(" ")).unwrap(), (None, None));
        let (from, to) = date_range(Some("2027-02-01"), Some("2027-02-01")).unwrap();
        assert!(from.unwrap() < to.unwrap());
        assert_eq!(
            slug(date_range(Some("2027-02-02"), Some("2027-02-01")).unwrap_err()),
            "bad-date-range"
        );
        assert_eq!(slug(date_range(Some("soon"), None).unwrap_err()), "bad-date");
    }
}

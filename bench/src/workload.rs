//! The requests the scenarios send, the same for every target: seat picks from one seeded
//! random sequence, customers with bearer tokens, and what each answer means.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use frontrow_http::auth::Auth;
use frontrow_schema::CustomerId;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::{Value, json};

use crate::load::{Job, Outcome, classify};

/// The seats of the sample arena (20,008), row by row.
pub fn arena_rows() -> Vec<Vec<String>> {
    let map = frontrow::sample::arena();
    let mut rows = Vec::new();
    for section in &map.sections {
        for row in &section.rows {
            rows.push(
                (1..=row.seats)
                    .map(|n| format!("{}-{}-{n}", section.code, row.name))
                    .collect(),
            );
        }
    }
    rows
}

/// `count` picks of 1 to 4 adjacent seats in a random row: fans clicking seats they like.
pub fn seat_picks(rows: &[Vec<String>], count: usize, seed: u64) -> Vec<Vec<String>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let row = &rows[rng.random_range(0..rows.len())];
            let n = rng.random_range(1..=4usize).min(row.len());
            let start = rng.random_range(0..=row.len() - n);
            row[start..start + n].to_vec()
        })
        .collect()
}

/// Bearer tokens for `n` customers (`fan0`...), minted with the target's secret.
pub fn tokens(auth: &Auth, n: usize) -> Vec<String> {
    let now = chrono::Utc::now();
    (0..n)
        .map(|i| {
            let customer = CustomerId::parse(&format!("fan{i}")).expect("valid customer id");
            auth.mint(&customer, now, now + chrono::Duration::hours(2))
        })
        .collect()
}

/// A reservation a target acknowledged with `201`.
#[derive(Debug, Clone)]
pub struct Won {
    pub reservation: String,
    pub customer: usize,
    pub seats: Vec<String>,
    /// The log position FrontRow answered with.
    pub position: Option<String>,
    /// The harness's wall clock when the answer was in (scenario 6 aligns browser marks to it).
    pub acked_at: std::time::SystemTime,
}

/// What the requests of a race were answered.
#[derive(Default)]
pub struct RaceLog {
    pub won: Mutex<Vec<Won>>,
    pub paid: Mutex<BTreeSet<String>>,
}

/// Which target a reservation request goes to: FrontRow needs an `Idempotency-Key` and pays
/// through the simulated provider; the baselines have a `pay` route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Frontrow,
    NaivePg,
    RedisLock,
}

/// Shared inputs of a reservation job.
#[derive(Clone)]
pub struct Race {
    pub kind: Kind,
    pub client: reqwest::Client,
    pub base: String,
    pub event: String,
    pub tokens: Arc<Vec<String>>,
    pub log: Arc<RaceLog>,
}

impl Race {
    /// Explicit seats: request `i` asks for `picks[i]`.
    pub fn reserve_explicit(&self, picks: Arc<Vec<Vec<String>>>) -> Job {
        let race = self.clone();
        Arc::new(move |i| {
            let seats = picks[i as usize % picks.len()].clone();
            let race = race.clone();
            Box::pin(async move { race.reserve(i, json!({ "seats": seats })).await })
        })
    }

    /// Best available (FrontRow only): `count` adjacent seats in a random section.
    pub fn reserve_best(&self, sections: Arc<Vec<String>>, seed: u64) -> Job {
        let race = self.clone();
        Arc::new(move |i| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ i);
            let section = sections[rng.random_range(0..sections.len())].clone();
            let count = rng.random_range(1..=4u8);
            let race = race.clone();
            Box::pin(async move {
                race.reserve(i, json!({ "best_available": { "section": section, "count": count } }))
                    .await
            })
        })
    }

    async fn reserve(&self, i: u64, body: Value) -> Outcome {
        let customer = i as usize % self.tokens.len();
        let res = self
            .client
            .post(format!("{}/events/{}/reservations", self.base, self.event))
            .bearer_auth(&self.tokens[customer])
            .header("idempotency-key", uuid::Uuid::new_v4().to_string())
            .json(&body)
            .send()
            .await;
        let Ok(res) = res else { return Outcome::Error };
        let status = res.status().as_u16();
        let Ok(answer) = res.json::<Value>().await else {
            return Outcome::Error;
        };
        self.record_answer(customer, status, &answer)
    }

    /// Classifies a reservation's answer and logs an acknowledged hold (whichever client sent
    /// the request).
    pub(crate) fn record_answer(&self, customer: usize, status: u16, answer: &Value) -> Outcome {
        let outcome = classify(status, &[201], &[409]);
        if outcome == Outcome::Ok {
            let (Some(reservation), Some(seats)) = (answer["reservation_id"].as_str(), answer["seats"].as_array())
            else {
                return Outcome::Error;
            };
            let won = Won {
                reservation: reservation.to_owned(),
                customer,
                seats: seats.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect(),
                position: answer["position"].as_str().map(str::to_owned),
                acked_at: std::time::SystemTime::now(),
            };
            self.log.won.lock().expect("race log").push(won);
        }
        outcome
    }

    /// Pays the acknowledged reservations, request `i` paying `won[i]`.
    pub fn pay(&self, won: Arc<Vec<Won>>) -> Job {
        pay_job(self, won)
    }

    /// Classifies a payment's answer and logs the reservation as paid when it was booked
    /// (whichever client sent the request).
    pub(crate) fn record_payment(&self, won: &Won, status: u16, answer: &Value) -> Outcome {
        let booked = match self.kind {
            Kind::Frontrow => answer["outcome"] == "booked",
            _ => answer["status"] == "booked",
        };
        let outcome = classify(status, &[200], &[409]);
        if outcome == Outcome::Ok && booked {
            self.log.paid.lock().expect("race log").insert(won.reservation.clone());
            Outcome::Ok
        } else if outcome == Outcome::Ok {
            Outcome::Error
        } else {
            outcome
        }
    }
}

/// A client that pays one acknowledged reservation: the race's own (reqwest) or the lean one.
pub(crate) trait Payer: Clone + Send + Sync + 'static {
    fn pay_one(&self, won: &Won) -> impl Future<Output = Outcome> + Send;
}

/// The job that pays the acknowledged reservations through `payer`, request `i` paying `won[i]`.
pub(crate) fn pay_job<P: Payer>(payer: &P, won: Arc<Vec<Won>>) -> Job {
    let payer = payer.clone();
    Arc::new(move |i| {
        let payer = payer.clone();
        let won = won[i as usize % won.len()].clone();
        Box::pin(async move { payer.pay_one(&won).await })
    })
}

impl Payer for Race {
    async fn pay_one(&self, won: &Won) -> Outcome {
        let token = &self.tokens[won.customer];
        let request = match self.kind {
            // The simulated provider charges the hold and delivers a signed webhook to
            // FrontRow's `/webhooks/payments`; the answer is the webhook's.
            Kind::Frontrow => self
                .client
                .post(format!("{}/demo/payments", self.base))
                .json(&json!({ "event_id": self.event, "reservation_id": won.reservation })),
            Kind::NaivePg | Kind::RedisLock => self.client.post(format!(
                "{}/events/{}/reservations/{}/pay",
                self.base, self.event, won.reservation
            )),
        };
        let Ok(res) = request.bearer_auth(token).send().await else {
            return Outcome::Error;
        };
        let status = res.status().as_u16();
        let Ok(answer) = res.json::<Value>().await else {
            return Outcome::Error;
        };
        self.record_payment(won, status, &answer)
    }
}

/// The correctness check of one race.
#[derive(Debug, Clone, Serialize)]
pub struct RaceCheck {
    pub event: String,
    pub capacity: usize,
    pub available: usize,
    pub reserved: usize,
    pub booked: usize,
    pub acknowledged_reservations: usize,
    pub paid_reservations: usize,
    /// Seats acknowledged to more than one reservation: oversold.
    pub seats_sold_twice: usize,
    /// Seats whose stored status is not what the acknowledged answers imply.
    pub seats_mismatched: usize,
    /// For FrontRow: the seat map equals a replay of the journal through the domain.
    pub map_equals_log: Option<bool>,
    pub passed: bool,
}

impl RaceCheck {
    /// One line for the console: `ok` or `FAILED`, the seat counts and the failures.
    pub fn summary(&self) -> String {
        format!(
            "{} (reserved {} + booked {} + free {} = {}; sold twice {}; mismatched {})",
            if self.passed { "ok" } else { "FAILED" },
            self.reserved,
            self.booked,
            self.available,
            self.capacity,
            self.seats_sold_twice,
            self.seats_mismatched
        )
    }
}

/// Checks a race's answers against the statuses the target stores (`A`, `H`, `B` per seat).
pub fn check_race(
    event: &str,
    capacity: usize,
    log: &RaceLog,
    statuses: &BTreeMap<String, char>,
    map_equals_log: Option<bool>,
) -> RaceCheck {
    let won = log.won.lock().expect("race log");
    let paid = log.paid.lock().expect("race log");
    let mut expected: BTreeMap<&str, char> = BTreeMap::new();
    let mut twice = 0;
    for w in won.iter() {
        let letter = if paid.contains(&w.reservation) { 'B' } else { 'H' };
        for seat in &w.seats {
            if expected.insert(seat, letter).is_some() {
                twice += 1;
            }
        }
    }
    let count = |c: char| statuses.values().filter(|&&s| s == c).count();
    let (available, reserved, booked) = (count('A'), count('H'), count('B'));
    let mismatched = statuses
        .iter()
        .filter(|(seat, status)| expected.get(seat.as_str()).copied().unwrap_or('A') != **status)
        .count()
        + expected.keys().filter(|s| !statuses.contains_key(**s)).count();
    let passed = twice == 0
        && mismatched == 0
        && statuses.len() == capacity
        && available + reserved + booked == capacity
        && map_equals_log != Some(false);
    RaceCheck {
        event: event.to_owned(),
        capacity,
        available,
        reserved,
        booked,
        acknowledged_reservations: won.len(),
        paid_reservations: paid.len(),
        seats_sold_twice: twice,
        seats_mismatched: mismatched,
        map_equals_log,
        passed,
    }
}

/// One figure as the analytics replay of the log reports it and as the race observed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Agree {
    pub analytics: u64,
    pub observed: u64,
}

impl Agree {
    fn ok(&self) -> bool {
        self.analytics == self.observed
    }
}

/// The figures of one event that the analytics replay is checked on, taken from its report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayedFigures {
    pub reservations: u64,
    pub seats_reserved: u64,
    pub bookings: u64,
    pub seats_booked_total: u64,
    /// Releases of every reason.
    pub releases: u64,
    pub seats_total: u64,
    pub seats_held_now: u64,
    pub seats_booked_now: u64,
}

impl From<&frontrow_analytics::EventReport> for ReplayedFigures {
    fn from(r: &frontrow_analytics::EventReport) -> Self {
        let t = &r.totals;
        Self {
            reservations: t.reservations,
            seats_reserved: t.seats_reserved,
            bookings: t.bookings,
            seats_booked_total: t.seats_booked,
            releases: t.expired + t.released + t.payment_failed + t.refunded,
            seats_total: r.seats_total,
            seats_held_now: r.seats_held_now,
            seats_booked_now: r.seats_booked_now,
        }
    }
}

/// Whether the analytics replay of a race's event agrees with the race: every `201` is one
/// reservation in the log (and its seats the seats reserved), every paid hold one booking, no
/// release (the harness releases nothing and holds outlive the run), and the seats held and
/// booked at the end of the log are the ones the race's check found in the availability map.
#[derive(Debug, Clone, Serialize)]
pub struct AnalyticsCheck {
    pub event: String,
    /// `false` when the replay has no report for the event at all.
    pub in_report: bool,
    pub reservations: Agree,
    pub seats_reserved: Agree,
    pub bookings: Agree,
    pub seats_booked_total: Agree,
    pub releases: Agree,
    pub seats_total: Agree,
    pub seats_held_now: Agree,
    pub seats_booked_now: Agree,
    pub passed: bool,
}

/// Checks the analytics figures of a race's event (`None`: the replay did not report it)
/// against the race's answers and its check of the stored seat states.
pub fn check_analytics(log: &RaceLog, race: &RaceCheck, replayed: Option<ReplayedFigures>) -> AnalyticsCheck {
    let won = log.won.lock().expect("race log");
    let paid = log.paid.lock().expect("race log");
    let seats_won: usize = won.iter().map(|w| w.seats.len()).sum();
    let seats_paid: usize = won
        .iter()
        .filter(|w| paid.contains(&w.reservation))
        .map(|w| w.seats.len())
        .sum();
    let f = replayed.unwrap_or_default();
    let agree = |analytics: u64, observed: usize| Agree {
        analytics,
        observed: observed as u64,
    };
    let mut check = AnalyticsCheck {
        event: race.event.clone(),
        in_report: replayed.is_some(),
        reservations: agree(f.reservations, won.len()),
        seats_reserved: agree(f.seats_reserved, seats_won),
        bookings: agree(f.bookings, paid.len()),
        seats_booked_total: agree(f.seats_booked_total, seats_paid),
        releases: agree(f.releases, 0),
        seats_total: agree(f.seats_total, race.capacity),
        seats_held_now: agree(f.seats_held_now, race.reserved),
        seats_booked_now: agree(f.seats_booked_now, race.booked),
        passed: false,
    };
    check.passed = check.in_report
        && [
            check.reservations,
            check.seats_reserved,
            check.bookings,
            check.seats_booked_total,
            check.releases,
            check.seats_total,
            check.seats_held_now,
            check.seats_booked_now,
        ]
        .iter()
        .all(Agree::ok);
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_are_adjacent_seats_of_one_row_and_repeatable() {
        let rows = arena_rows();
        assert_eq!(rows.iter().map(Vec::len).sum::<usize>(), 20_008);
        let a = seat_picks(&rows, 100, 7);
        assert_eq!(a, seat_picks(&rows, 100, 7));
        for pick in &a {
            assert!((1..=4).contains(&pick.len()));
            let row: Vec<&str> = pick.iter().map(|s| s.rsplit_once('-').unwrap().0).collect();
            assert!(row.iter().all(|r| *r == row[0]), "{pick:?}");
        }
    }

    #[test]
    fn a_seat_acknowledged_twice_or_stored_wrong_fails_the_check() {
        let log = RaceLog::default();
        let won = |r: &str, seats: &[&str]| Won {
            reservation: r.into(),
            customer: 0,
            seats: seats.iter().map(|s| s.to_string()).collect(),
            position: None,
            acked_at: std::time::SystemTime::now(),
        };
        log.won.lock().unwrap().push(won("r1", &["A-1-1", "A-1-2"]));
        log.paid.lock().unwrap().insert("r1".into());
        let statuses: BTreeMap<String, char> = [("A-1-1", 'B'), ("A-1-2", 'B'), ("A-1-3", 'A')]
            .into_iter()
            .map(|(s, c)| (s.to_owned(), c))
            .collect();
        let good = check_race("e", 3, &log, &statuses, Some(true));
        assert!(good.passed, "{good:?}");
        assert_eq!((good.available, good.booked), (1, 2));

        log.won.lock().unwrap().push(won("r2", &["A-1-2"]));
        let twice = check_race("e", 3, &log, &statuses, Some(true));
        assert!(!twice.passed);
        assert_eq!(twice.seats_sold_twice, 1);

        let mut wrong = statuses.clone();
        wrong.insert("A-1-3".into(), 'H');
        log.won.lock().unwrap().pop();
        let stray = check_race("e", 3, &log, &wrong, Some(true));
        assert!(!stray.passed);
        assert_eq!(stray.seats_mismatched, 1);
        assert!(!check_race("e", 3, &log, &statuses, Some(false)).passed);
    }

    #[test]
    fn analytics_figures_that_differ_from_the_race_fail_the_check() {
        let log = RaceLog::default();
        for (r, seats) in [("r1", vec!["A-1-1", "A-1-2"]), ("r2", vec!["A-1-3"])] {
            log.won.lock().unwrap().push(Won {
                reservation: r.into(),
                customer: 0,
                seats: seats.iter().map(|s| s.to_string()).collect(),
                position: None,
                acked_at: std::time::SystemTime::now(),
            });
        }
        log.paid.lock().unwrap().insert("r1".into());
        let statuses: BTreeMap<String, char> = [("A-1-1", 'B'), ("A-1-2", 'B'), ("A-1-3", 'H'), ("A-1-4", 'A')]
            .into_iter()
            .map(|(s, c)| (s.to_owned(), c))
            .collect();
        let race = check_race("e", 4, &log, &statuses, Some(true));
        assert!(race.passed, "{race:?}");
        let right = ReplayedFigures {
            reservations: 2,
            seats_reserved: 3,
            bookings: 1,
            seats_booked_total: 2,
            releases: 0,
            seats_total: 4,
            seats_held_now: 1,
            seats_booked_now: 2,
        };
        let good = check_analytics(&log, &race, Some(right));
        assert!(good.passed, "{good:?}");
        assert_eq!(
            good.bookings,
            Agree {
                analytics: 1,
                observed: 1
            }
        );

        assert!(
            !check_analytics(&log, &race, None).passed,
            "an event missing from the report"
        );
        let wrong: [fn(&mut ReplayedFigures); 8] = [
            |f| f.reservations += 1,
            |f| f.seats_reserved -= 1,
            |f| f.bookings = 2,
            |f| f.seats_booked_total = 3,
            |f| f.releases = 1,
            |f| f.seats_total = 20_008,
            |f| f.seats_held_now = 0,
            |f| f.seats_booked_now = 3,
        ];
        for (i, change) in wrong.iter().enumerate() {
            let mut figures = right;
            change(&mut figures);
            assert!(!check_analytics(&log, &race, Some(figures)).passed, "change {i} passed");
        }
    }
}

//! Sample values for the tests of every crate (behind the `testsuite` feature): a seat map
//! from compact tiers and rows, and an `EventScheduled` that each test adjusts field by field
//! with `..sample_event(..)`; and [`wait_until`], the one way a test waits for what happens
//! behind a call.

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

use crate::{Currency, EventId, EventScheduled, HoldMinutes, OrganizerId, SeatMap};

/// A price tier: code, name, price in minor units.
pub type Tier<'a> = (&'a str, &'a str, i64);
/// A row: name, number of seats, tier code.
pub type Row<'a> = (&'a str, u16, &'a str);

/// The JSON of a seat map (as an organizer sends it) with these tiers and sections (each a
/// [`seated`] or a [`standing`] one).
pub fn seat_map_json(tiers: &[Tier], sections: Vec<Value>) -> Value {
    let tiers: Vec<Value> = tiers
        .iter()
        .map(|(code, name, price)| json!({"code": code, "name": name, "price": price}))
        .collect();
    json!({"tiers": tiers, "sections": sections})
}

/// A seated section with these rows, front to back.
pub fn seated(code: &str, name: &str, rows: &[Row]) -> Value {
    let rows: Vec<Value> = rows
        .iter()
        .map(|(name, seats, tier)| json!({"name": name, "seats": seats, "tier": tier}))
        .collect();
    json!({"code": code, "name": name, "rows": rows})
}

/// A standing zone of `capacity` places at `tier`.
pub fn standing(code: &str, name: &str, capacity: u32, tier: &str) -> Value {
    json!({"code": code, "name": name, "standing": {"capacity": capacity, "tier": tier}})
}

/// [`seat_map_json`], read as a [`SeatMap`].
pub fn seat_map(tiers: &[Tier], sections: Vec<Value>) -> SeatMap {
    serde_json::from_value(seat_map_json(tiers, sections)).unwrap()
}

/// "Night Show" by "The Band" at "Hall", Lyon, organized by `acme`: on sale at `onsale`, 30
/// days before the show, holds of [`HoldMinutes::DEFAULT`], 4 seats per order, no
/// per-customer limit, the no-orphan rule on, in euros.
pub fn sample_event(event_id: EventId, onsale: DateTime<Utc>, seat_map: SeatMap) -> EventScheduled {
    EventScheduled {
        event_id,
        organizer: OrganizerId::parse("acme").unwrap(),
        title: "Night Show".into(),
        artist: "The Band".into(),
        venue: "Hall".into(),
        city: "Lyon".into(),
        tags: vec![],
        aliases: vec![],
        starts_at: onsale + Duration::days(30),
        onsale_at: onsale,
        hold_minutes: HoldMinutes::DEFAULT,
        max_seats_per_order: 4,
        max_seats_per_customer: None,
        allow_orphan_seats: false,
        currency: Currency::parse("EUR").unwrap(),
        seat_map: seat_map.into(),
    }
}

/// Looks with `look` every 20 ms until `accept` takes what it saw, and returns what `accept`
/// made of it: for what runs behind a call (the query side, the projectors, the writer's
/// timers, a broker). After `timeout` it fails with `message` (what it waited for) and the last
/// value seen, or, if a look is still unanswered then, with `message` alone: a look that never
/// answers fails the wait instead of holding it forever.
pub async fn wait_until<V, T, Look, Seen>(
    timeout: std::time::Duration,
    message: &str,
    mut look: Look,
    mut accept: impl FnMut(&V) -> Option<T>,
) -> T
where
    V: std::fmt::Debug,
    Look: FnMut() -> Seen,
    Seen: std::future::Future<Output = V>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let Ok(seen) = tokio::time::timeout_at(deadline, look()).await else {
            panic!("waited {timeout:?} until {message}; the last look did not answer");
        };
        if let Some(done) = accept(&seen) {
            return done;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited {timeout:?} until {message}; last seen: {seen:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

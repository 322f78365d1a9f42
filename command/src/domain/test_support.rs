//! Fixtures shared by the domain's test modules: ids, money, the onsale instant, a one-section
//! seat map, an `EventScheduled` that each module adjusts field by field, and the decide-then-
//! apply step with which every simulator drives the domain the way the writer does.

use chrono::{DateTime, Duration, TimeZone, Utc};
use frontrow_schema::testsuite::{self, sample_event, seated};
use frontrow_schema::*;
use uuid::Uuid;

use super::*;

/// The onsale of every test event: 2030-06-01 10:00 UTC.
pub fn onsale() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2030, 6, 1, 10, 0, 0).unwrap()
}

/// Minutes relative to the onsale: `at(0)` is the onsale, `at(-1)` a minute before it.
pub fn at(minutes: i64) -> DateTime<Utc> {
    onsale() + Duration::minutes(minutes)
}

/// The one event of every test module.
pub fn event_id() -> EventId {
    EventId::from_uuid(Uuid::from_u128(0xE))
}

pub fn rid(n: u128) -> ReservationId {
    ReservationId::from_uuid(Uuid::from_u128(n))
}

pub fn customer(name: &str) -> CustomerId {
    CustomerId::parse(name).unwrap()
}

/// The `n`th fan: customer `fan{n}`.
pub fn fan(n: impl std::fmt::Display) -> CustomerId {
    customer(&format!("fan{n}"))
}

pub fn organizer() -> OrganizerId {
    OrganizerId::parse("org").unwrap()
}

pub fn section(code: &str) -> SectionCode {
    SectionCode::parse(code).unwrap()
}

pub fn seat(id: &str) -> SeatId {
    id.parse().unwrap()
}

pub fn seats(ids: &[&str]) -> Vec<SeatId> {
    ids.iter().map(|s| seat(s)).collect()
}

pub fn eur(amount: i64) -> Money {
    Money {
        amount,
        currency: Currency::parse("EUR").unwrap(),
    }
}

/// One section `A` ("Floor") with rows `1..` of these lengths, every seat Standard at 40.00.
pub fn floor(rows: &[u16]) -> SeatMap {
    let names: Vec<String> = (1..=rows.len()).map(|r| r.to_string()).collect();
    let rows: Vec<testsuite::Row> = names
        .iter()
        .zip(rows)
        .map(|(name, &seats)| (name.as_str(), seats, "STD"))
        .collect();
    testsuite::seat_map(&[("STD", "Standard", 4000)], vec![seated("A", "Floor", &rows)])
}

/// The schema's [`sample_event`] by [`organizer`], on sale at [`onsale`]: "Night Show" by
/// "The Band" at "Hall", Lyon, 30 days before the show, holds of 10 minutes, 4 seats per
/// order, no per-customer limit, the no-orphan rule on, in euros. Each test module overrides
/// what its rules need with `..info(id, map)`.
pub fn info(event_id: EventId, seat_map: SeatMap) -> EventScheduled {
    EventScheduled {
        organizer: organizer(),
        ..sample_event(event_id, onsale(), seat_map)
    }
}

/// The seat counts of a state: available, held, booked, withheld.
pub fn counts(available: u32, held: u32, booked: u32, withheld: u32) -> Counts {
    Counts {
        available,
        held,
        booked,
        withheld,
    }
}

/// Decides `command` at `now`, then applies what was decided under `key`: one step of the
/// writer, without the journal.
pub fn decide_and_apply(
    state: &mut Option<EventState>,
    event_id: EventId,
    command: &Command,
    now: DateTime<Utc>,
    key: Option<&str>,
) -> Result<Vec<Event>, Rejection> {
    let events = decide(state.as_ref(), event_id, command, now)?;
    for e in &events {
        apply(state, e, key);
    }
    Ok(events)
}

/// The tickets of the fans that `events` admit from the waiting room.
pub fn admitted(events: &[Event]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Queue(QueueEvent::Admitted(a)) => Some(a.ticket),
            _ => None,
        })
        .collect()
}

/// The provider's report that reservation `id` of `state` is paid in full, as its event
/// `evt_{tag}` for the intent `pi_{tag}`.
pub fn paid_in_full(state: &EventState, id: ReservationId, tag: impl std::fmt::Display) -> Command {
    Command::PaymentSucceeded {
        reservation_id: id,
        payment: Payment {
            provider_event_id: format!("evt_{tag}"),
            payment_intent: format!("pi_{tag}"),
            amount: state.reservations[&id].amount,
        },
    }
}

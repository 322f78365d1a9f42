//! One seat's history, straight from the log.
//!
//! The log is the source of a seat's history, and this module computes it from the log alone,
//! in the ledger's [`SeatHistory`] shape: it serves `GET /events/{id}/seats/{seat}/history`
//! (see [`crate::api`]) and `frontrow analytics seat`. The ledger keeps the same history in its
//! `seat_history` table as an index for its own reports; the tests hold the two equal.
//! Times are given to the microsecond, as both ledgers (PostgreSQL `timestamptz`, SQLite) keep
//! them; the log itself stamps nanoseconds.

use chrono::SubsecRound;
use frontrow_journal::{Journal, JournalError};
use frontrow_projector::{SeatHistory, SeatHistoryEntry};
use frontrow_schema::seatmap::SeatLayout;
use frontrow_schema::{Event, EventId, OrganizerId, SeatId};

use crate::replay::{ReplayOptions, replay};

/// The seat's history, or `None` when the event is not in the log or its seat map has no such
/// seat.
pub async fn seat_history(
    journal: &dyn Journal,
    event_id: EventId,
    seat: &SeatId,
) -> Result<Option<SeatHistory>, JournalError> {
    Ok(seat_history_with_organizer(journal, event_id, seat)
        .await?
        .and_then(|(_, history)| history))
}

/// The event's organizer and the seat's history (`None` when the seat map has no such seat),
/// or `None` when the event is not in the log.
pub async fn seat_history_with_organizer(
    journal: &dyn Journal,
    event_id: EventId,
    seat: &SeatId,
) -> Result<Option<(OrganizerId, Option<SeatHistory>)>, JournalError> {
    let options = ReplayOptions {
        event: Some(event_id),
        ..ReplayOptions::default()
    };
    let mut layout: Option<SeatLayout> = None;
    let mut organizer: Option<OrganizerId> = None;
    let mut state = "available";
    let mut history = Vec::new();
    replay(
        journal,
        &options,
        |_, env| {
            let (seats, kind, reservation, to) = match &env.event {
                Event::EventScheduled(e) => {
                    if layout.is_none() {
                        layout = Some(SeatLayout::new(e.seat_map.clone()));
                        organizer = Some(e.organizer.clone());
                    }
                    return;
                }
                Event::SeatMapChanged(e) => {
                    layout = Some(SeatLayout::new(e.seat_map.clone()));
                    state = "available";
                    return;
                }
                Event::SeatsReserved(e) => (&e.seats, "held", Some(e.reservation_id), "held"),
                Event::SeatsBooked(e) => (&e.seats, "booked", Some(e.reservation_id), "booked"),
                Event::SeatsReleased(e) => (&e.seats, e.reason.as_str(), Some(e.reservation_id), "available"),
                Event::SeatsWithheld(e) => (&e.seats, "withheld", None, "withheld"),
                Event::SeatsReturned(e) => (&e.seats, "returned", None, "available"),
                Event::PaymentRefunded(_) | Event::PaymentFailed(_) | Event::Queue(_) => return,
            };
            // Like the ledger, only a seat of the map in force is recorded.
            let in_map = layout.as_ref().is_some_and(|l| l.index_of(seat).is_some());
            if in_map && seats.contains(seat) {
                state = to;
                history.push(SeatHistoryEntry {
                    sequence: env.sequence as i64,
                    kind: kind.to_owned(),
                    reservation_id: reservation.map(|r| r.as_uuid()),
                    at: env.time.trunc_subsecs(6),
                });
            }
        },
        |_| {},
    )
    .await?;
    let (Some(layout), Some(organizer)) = (layout, organizer) else {
        return Ok(None);
    };
    let Some(index) = layout.index_of(seat) else {
        return Ok(Some((organizer, None)));
    };
    let span = layout.row_of(index);
    let section = &layout.map().sections[span.section as usize];
    let history = SeatHistory {
        event_id: event_id.as_uuid(),
        seat: seat.to_string(),
        section: section.code.to_string(),
        tier: layout.tier_of(index).to_string(),
        price: span.price,
        state: state.to_owned(),
        history,
    };
    Ok(Some((organizer, Some(history))))
}

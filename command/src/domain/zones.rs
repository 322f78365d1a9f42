//! General admission: reserving a number of places from a standing zone.
//!
//! A standing zone's places are seats of the flat layout (one span flagged `standing`), so
//! holding, booking, releasing and the per-customer limit are those of seats. What differs is
//! only how places are picked: a fan asks for a count, not for ids, and any free places of the
//! zone will do (no adjacency, no orphan rule). The lowest-numbered free places are taken, so
//! the same state and command always give the same places. Seat ids of zone places
//! (`FLOOR-GA-17`) are never accepted from a fan, and best-available is for seated sections.

use frontrow_schema::seatmap::RowSpan;
use frontrow_schema::{SeatId, SectionCode};

use super::decide::{Rejection, SeatSelection};
use super::state::{EventState, Reservation, SeatState};

/// Refuses a selection that mixes up zones and seated sections: seat ids or best-available in a
/// standing zone, or a zone selection that names a seated section or nothing at all.
pub(super) fn check_selection(state: &EventState, selection: &SeatSelection) -> Result<(), Rejection> {
    match selection {
        SeatSelection::Explicit(ids) => match ids.iter().find(|id| is_zone_place(state, id)) {
            Some(id) => Err(Rejection::StandingZone(id.section.clone())),
            None => Ok(()),
        },
        SeatSelection::BestAvailable { section, .. } | SeatSelection::BestWith { section, .. } => {
            match zone(state, section) {
                Ok(_) => Err(Rejection::StandingZone(section.clone())),
                Err(_) => Ok(()),
            }
        }
        SeatSelection::Zone { zone: code, .. } => zone(state, code).map(|_| ()),
    }
}

/// The `count` lowest-numbered free places of a zone, or why there are not that many.
pub(super) fn take(state: &EventState, code: &SectionCode, count: u8) -> Result<Vec<u32>, Rejection> {
    let span = zone(state, code)?;
    let places = span.start..span.start + u32::from(span.seats);
    let free: Vec<u32> = places
        .filter(|&i| state.seats[i as usize] == SeatState::Available)
        .take(usize::from(count))
        .collect();
    match free.len() {
        n if n == usize::from(count) => Ok(free),
        0 => Err(Rejection::ZoneSoldOut(code.clone())),
        _ => Err(Rejection::NotEnoughPlaces {
            zone: code.clone(),
            asked: count,
            available: free_places(state, &span),
        }),
    }
}

/// Whether a reservation is what a zone selection of `count` places asks for: a retry of it.
pub(super) fn same_request(state: &EventState, r: &Reservation, code: &SectionCode, count: u8) -> bool {
    let Ok(span) = zone(state, code) else { return false };
    r.seats.len() == usize::from(count)
        && r.seats
            .iter()
            .all(|i| (span.start..span.start + u32::from(span.seats)).contains(i))
}

/// The span of a standing zone, or why `code` is not one.
fn zone(state: &EventState, code: &SectionCode) -> Result<RowSpan, Rejection> {
    let section = state
        .layout
        .section_index(code)
        .ok_or_else(|| Rejection::UnknownZone(code.clone()))?;
    state
        .layout
        .zone_span(section)
        .ok_or_else(|| Rejection::NotAZone(code.clone()))
}

fn is_zone_place(state: &EventState, id: &SeatId) -> bool {
    state
        .layout
        .index_of(id)
        .is_some_and(|i| state.layout.row_of(i).standing)
}

fn free_places(state: &EventState, span: &RowSpan) -> u32 {
    let places = &state.seats[span.start as usize..(span.start + u32::from(span.seats)) as usize];
    places.iter().filter(|s| **s == SeatState::Available).count() as u32
}

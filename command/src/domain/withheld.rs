//! Organizer holds: seats the organizer keeps out of the sale (house seats, production holds)
//! and puts back on sale later.
//!
//! Both commands say what the organizer wants the seats to be, so a retry is harmless: asking
//! to withhold seats already withheld under the same label, or to return seats that are not
//! withheld, changes nothing and is answered as done. A request with an `Idempotency-Key` is
//! also remembered by that key (as a digest of what it asked): its retry changes nothing even
//! when the seats were returned or withheld in between, and the key used for another request
//! is refused. Such a request is written even when it changes no seat, so its key is kept.
//! Only available seats can be withheld: a seat a customer holds or bought is refused by name,
//! and so is one withheld under another label. Returned seats are available again, and the
//! writer's next `AdvanceQueue` admits fans against them (or offers them to the waiting list of
//! a sold-out event).

use frontrow_schema::*;

use super::decide::Rejection;
use super::state::{EventState, SeatState};

/// The most seats one withhold or return may name.
pub const MAX_SEATS_PER_WITHHOLD: usize = 1000;
/// The longest label of an organizer hold.
pub const MAX_LABEL: usize = 100;

pub(super) fn withhold(
    state: &EventState,
    organizer: &OrganizerId,
    seats: &[SeatId],
    label: &str,
    key: Option<&str>,
) -> Result<Vec<Event>, Rejection> {
    let indexes = organizer_seats(state, organizer, seats)?;
    if !text_fits(label, MAX_LABEL) {
        return Err(Rejection::BadLabel);
    }
    let Keyed::New(request) = keyed(state, key, OrganizerRequest::Withhold { seats, label })? else {
        return Ok(vec![]);
    };
    let mut in_sale = Vec::new();
    let mut other: Option<(&str, Vec<SeatId>)> = None;
    let mut new = Vec::new();
    for (&i, id) in indexes.iter().zip(seats) {
        match state.seats[i as usize] {
            SeatState::Available => new.push(id.clone()),
            SeatState::Held | SeatState::Booked => in_sale.push(id.clone()),
            SeatState::Withheld => {
                let theirs = state.withheld.get(&i).map_or("", String::as_str);
                if theirs != label {
                    let (_, list) = other.get_or_insert((theirs, Vec::new()));
                    list.push(id.clone());
                }
            }
        }
    }
    if !in_sale.is_empty() {
        return Err(Rejection::SeatsInSale(in_sale));
    }
    if let Some((label, seats)) = other {
        return Err(Rejection::WithheldOtherwise {
            label: label.to_owned(),
            seats,
        });
    }
    if new.is_empty() && request.is_none() {
        return Ok(vec![]);
    }
    Ok(vec![Event::SeatsWithheld(SeatsWithheld {
        seats: new,
        label: label.to_owned(),
        request,
    })])
}

pub(super) fn return_withheld(
    state: &EventState,
    organizer: &OrganizerId,
    seats: &[SeatId],
    key: Option<&str>,
) -> Result<Vec<Event>, Rejection> {
    let indexes = organizer_seats(state, organizer, seats)?;
    let Keyed::New(request) = keyed(state, key, OrganizerRequest::Return { seats })? else {
        return Ok(vec![]);
    };
    let back: Vec<SeatId> = indexes
        .iter()
        .zip(seats)
        .filter(|&(&i, _)| state.seats[i as usize] == SeatState::Withheld)
        .map(|(_, id)| id.clone())
        .collect();
    if back.is_empty() && request.is_none() {
        return Ok(vec![]);
    }
    Ok(vec![Event::SeatsReturned(SeatsReturned { seats: back, request })])
}

/// What an organizer's withhold or return asked for.
#[derive(Debug, Clone, Copy)]
enum OrganizerRequest<'a> {
    Withhold { seats: &'a [SeatId], label: &'a str },
    Return { seats: &'a [SeatId] },
}

impl OrganizerRequest<'_> {
    /// Lower-case hex SHA-256 of the request's kind, label and sorted seat ids: the same
    /// request gives the same digest whatever the order of its seats, in every build.
    fn digest(self) -> String {
        use sha2::{Digest, Sha256};
        let (kind, seats, label) = match self {
            OrganizerRequest::Withhold { seats, label } => ("withhold", seats, label),
            OrganizerRequest::Return { seats } => ("return", seats, ""),
        };
        let mut ids: Vec<String> = seats.iter().map(SeatId::to_string).collect();
        ids.sort_unstable();
        let mut hash = Sha256::new();
        for part in [kind, label].into_iter().chain(ids.iter().map(String::as_str)) {
            // Length-prefixed, so no two requests run together into the same bytes.
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part.as_bytes());
        }
        hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Where a request stands under its `Idempotency-Key`.
enum Keyed {
    /// The key already wrote this very request: nothing more to do.
    Retry,
    /// A request to decide, with the digest that goes into its event when it has a key.
    New(Option<String>),
}

/// How `request` stands under `key`; a key that wrote another request is refused.
fn keyed(state: &EventState, key: Option<&str>, request: OrganizerRequest<'_>) -> Result<Keyed, Rejection> {
    let Some(key) = key else {
        return Ok(Keyed::New(None));
    };
    let digest = request.digest();
    match state.organizer_requests.get(key) {
        Some(seen) if *seen == digest => Ok(Keyed::Retry),
        Some(_) => Err(Rejection::IdempotencyKeyReused),
        None => Ok(Keyed::New(Some(digest))),
    }
}

/// The seat indexes of an organizer's list: their event, 1 to [`MAX_SEATS_PER_WITHHOLD`]
/// seats, each once and each on the map.
fn organizer_seats(state: &EventState, organizer: &OrganizerId, seats: &[SeatId]) -> Result<Vec<u32>, Rejection> {
    if &state.info.organizer != organizer {
        return Err(Rejection::NotYourEvent);
    }
    if seats.is_empty() || seats.len() > MAX_SEATS_PER_WITHHOLD {
        return Err(Rejection::BadWithholdSize { asked: seats.len() });
    }
    let mut seen = std::collections::HashSet::new();
    let mut indexes = Vec::with_capacity(seats.len());
    let mut unknown = Vec::new();
    for id in seats {
        if !seen.insert(id) {
            return Err(Rejection::DuplicateSeat(id.clone()));
        }
        match state.layout.index_of(id) {
            Some(i) => indexes.push(i),
            None => unknown.push(id.clone()),
        }
    }
    if !unknown.is_empty() {
        return Err(Rejection::UnknownSeats(unknown));
    }
    Ok(indexes)
}

//! The seat map of one event as a pure state machine.
//!
//! `AVAILABLE -> RESERVED (a hold until T) -> BOOKED`; a deadline, a release or a failed
//! payment returns held seats to `AVAILABLE`, and cancelling a booking refunds it and frees its
//! seats. [`decide`] holds every rule; [`EventState::apply`] only records what happened. There
//! is no I/O here, no clock and no randomness: the writer passes `now` and fresh ids in.

mod attributes;
mod decide;
mod orphans;
pub mod queue;
mod state;
mod withheld;
mod zones;

pub use attributes::{MIN_ACCESSIBLE_SEATS, SeatNeeds};
pub use decide::{
    Command, MAX_PROVIDER_MESSAGE, MAX_SEATS_PER_CUSTOMER, MAX_SEATS_PER_ORDER, MAX_TEXT, QueueSettings, Rejection,
    SeatSelection, decide,
};
pub use orphans::{OrderSizes, sellable};
pub use queue::{QueueState, Ticket, TicketStatus};
pub use state::{Counts, EventSnapshot, EventState, Reservation, ReservationStatus, SeatState};
pub use withheld::{MAX_LABEL, MAX_SEATS_PER_WITHHOLD};

use frontrow_schema::Event;

/// Applies an event to an optional state: `EventScheduled` creates it, the rest update it.
pub fn apply(state: &mut Option<EventState>, event: &Event, idempotency_key: Option<&str>) {
    match (state.as_mut(), event) {
        (None, Event::EventScheduled(info)) => {
            *state = Some(EventState::scheduled(info.clone(), idempotency_key.map(str::to_owned)));
        }
        (Some(s), e) => s.apply(e, idempotency_key),
        // Anything else before EventScheduled cannot have been decided; ignore it.
        (None, _) => {}
    }
}

#[cfg(test)]
mod attribute_tests;
#[cfg(test)]
mod orphan_tests;
#[cfg(test)]
mod queue_tests;
#[cfg(test)]
mod seating_properties;
#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod zone_tests;

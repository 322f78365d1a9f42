//! The rules: every command is decided here, against the current state and the time passed in.
//!
//! `decide` is pure: no I/O, no clock, no randomness. New ids (reservation ids) arrive inside
//! the command. An empty list of events with `Ok` means "already done": the command is a retry
//! of something the log already has, and the caller answers from the state as it is.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use frontrow_schema::*;

use super::attributes::{MIN_ACCESSIBLE_SEATS, SeatNeeds, best_with};
use super::orphans;
use super::queue::{QueueState, TicketStatus};
use super::state::{EventState, ReservationStatus, SeatState};
use super::withheld::{MAX_LABEL, MAX_SEATS_PER_WITHHOLD, return_withheld, withhold};
use super::zones;

/// Longest free text (title, artist, venue, city).
pub const MAX_TEXT: usize = 200;
/// Most tags of an event, and the longest tag.
const MAX_TAGS: usize = 10;
const MAX_TAG: usize = 40;
/// The longest payment provider message kept in the log; a longer one is cut.
pub const MAX_PROVIDER_MESSAGE: usize = 500;
/// The highest per-order seat limit an organizer may set.
pub const MAX_SEATS_PER_ORDER: u8 = 20;
/// The highest per-customer seat limit an organizer may set.
pub const MAX_SEATS_PER_CUSTOMER: u16 = 1000;

/// Which seats a customer asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeatSelection {
    /// Exactly these seats.
    Explicit(Vec<SeatId>),
    /// The best `count` adjacent seats in one section: the frontmost row that has a run of
    /// `count` free seats, and in it the run closest to the row's centre; under the event's
    /// no-orphan rule, a block that strands no single seat first (see `domain::orphans`).
    BestAvailable { section: SectionCode, count: u8 },
    /// Best-available that asks for seat attributes (an accessible block, an aisle), see
    /// `domain::attributes`.
    BestWith {
        section: SectionCode,
        count: u8,
        needs: SeatNeeds,
    },
    /// Any `count` free places of a standing zone (see `zones`).
    Zone { zone: SectionCode, count: u8 },
}

impl SeatSelection {
    fn count(&self) -> usize {
        match self {
            SeatSelection::Explicit(seats) => seats.len(),
            SeatSelection::BestAvailable { count, .. }
            | SeatSelection::BestWith { count, .. }
            | SeatSelection::Zone { count, .. } => usize::from(*count),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Put a new event on sale.
    Schedule(Box<EventScheduled>),
    /// Replace the seat map before the onsale.
    ChangeSeatMap { organizer: OrganizerId, seat_map: SeatMap },
    Reserve {
        customer: CustomerId,
        /// A fresh id for the reservation, used only if one is created.
        reservation_id: ReservationId,
        selection: SeatSelection,
        idempotency_key: String,
        /// The queue ticket of the caller's admission token, already verified (signature,
        /// event, customer, expiry) at the edge. Required when the event has a waiting room.
        admission: Option<u64>,
    },
    /// The customer lets a hold go.
    Release {
        customer: CustomerId,
        reservation_id: ReservationId,
    },
    /// The customer cancels a booking, which refunds it and frees its seats.
    Cancel {
        customer: CustomerId,
        reservation_id: ReservationId,
    },
    /// The hold's deadline passed (sent by the writer's timer).
    Expire { reservation_id: ReservationId },
    PaymentSucceeded {
        reservation_id: ReservationId,
        payment: Payment,
    },
    PaymentFailed {
        reservation_id: ReservationId,
        provider_event_id: String,
        payment_intent: String,
        message: Option<String>,
    },
    /// Put the event behind a waiting room (or change its settings) before the onsale.
    OpenQueue {
        organizer: OrganizerId,
        settings: QueueSettings,
    },
    /// A fan takes a ticket in the queue; a retry gets the same ticket.
    JoinQueue { customer: CustomerId },
    /// A fan gives up their place (or their admission).
    LeaveQueue { customer: CustomerId },
    /// A fan asks to be offered seats of a sold-out event that come back.
    JoinWaitlist { customer: CustomerId },
    /// Move the waiting room on (sent by the writer after commands and on its timers): draw
    /// the pre-queue's lottery with `seed` at the onsale, let admissions that ran out lapse,
    /// admit fans as the inventory allows, and say "sold out" when nothing is left to buy.
    AdvanceQueue { seed: u64 },
    /// The organizer takes available seats out of the sale under a label (see
    /// `domain::withheld`).
    Withhold {
        organizer: OrganizerId,
        seats: Vec<SeatId>,
        label: String,
        /// The request's `Idempotency-Key`: a retry with it changes nothing more, even after
        /// the seats were returned in between.
        idempotency_key: Option<String>,
    },
    /// The organizer puts withheld seats back on sale.
    ReturnWithheld {
        organizer: OrganizerId,
        seats: Vec<SeatId>,
        idempotency_key: Option<String>,
    },
}

/// The organizer's waiting-room settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSettings {
    /// Most fans waiting at once (`None`: no limit).
    pub max_size: Option<u32>,
    /// Most admitted fans shopping at once.
    pub max_shoppers: u32,
    /// How long an admission lasts, in seconds (60 to 3600).
    pub admission_secs: u32,
}

/// Why a command was refused. Nothing was recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("event {0} does not exist")]
    UnknownEvent(EventId),
    #[error("event {0} already exists with different details")]
    EventExists(EventId),
    #[error("reservation {0} does not exist")]
    UnknownReservation(ReservationId),
    #[error("this event belongs to another organizer")]
    NotYourEvent,
    #[error("invalid event: {0}")]
    InvalidEvent(String),
    #[error("invalid seat map: {0}")]
    InvalidSeatMap(#[from] SeatMapError),
    #[error("the onsale has started; the seat map can no longer change")]
    OnsaleStarted,
    #[error("the onsale opens at {0}")]
    NotOnSale(DateTime<Utc>),
    #[error("the event has started; sales are closed")]
    SalesClosed,
    #[error("an order has 1 to {max} seats, not {asked}")]
    BadSeatCount { asked: usize, max: u8 },
    #[error("at most {limit} seats per customer at this event: you hold or own {have}, and asked for {asked} more")]
    CustomerLimit { limit: u16, have: usize, asked: usize },
    #[error("the seats' prices add up to more than an amount can hold")]
    AmountTooLarge,
    #[error("a seat is listed twice: {0}")]
    DuplicateSeat(SeatId),
    #[error("these seats do not exist at this event: {}", join(.0))]
    UnknownSeats(Vec<SeatId>),
    #[error("section {0} does not exist at this event")]
    UnknownSection(SectionCode),
    #[error("these seats are not available: {}", join(.0))]
    SeatsUnavailable(Vec<SeatId>),
    #[error("section {section} has no {count} adjacent seats left")]
    NoAdjacentSeats { section: SectionCode, count: u8 },
    #[error("these seats would be left on their own in their row, where nobody can sit next to anyone: {}; choose seats that leave no single seat between taken seats or at a row's end", join(.0))]
    OrphanSeat(Vec<SeatId>),
    #[error(
        "an accessible order has at least {MIN_ACCESSIBLE_SEATS} seats (a wheelchair space and its companion seat), not {asked}"
    )]
    AccessibleTooFew { asked: u8 },
    #[error(
        "section {section} has no {count} adjacent free seats with a wheelchair space and a companion seat next to it"
    )]
    NoAccessibleSeats { section: SectionCode, count: u8 },
    #[error("there is no standing zone {0} at this event")]
    UnknownZone(SectionCode),
    #[error("section {0} is seated, not a standing zone: choose seats or best_available")]
    NotAZone(SectionCode),
    #[error("section {0} is a standing zone: reserve a count of places from it with zone and count")]
    StandingZone(SectionCode),
    #[error("standing zone {0} is sold out")]
    ZoneSoldOut(SectionCode),
    #[error("standing zone {zone} has {available} places left, not {asked}")]
    NotEnoughPlaces {
        zone: SectionCode,
        asked: u8,
        available: u32,
    },
    #[error("this Idempotency-Key was already used for a different request")]
    IdempotencyKeyReused,
    #[error("the reservation is booked; cancel it instead of releasing it")]
    AlreadyBooked,
    #[error("the reservation is not booked (it is {0})")]
    NotBooked(&'static str),
    #[error("invalid waiting room settings: {0}")]
    InvalidQueue(String),
    #[error("this event has no waiting room")]
    NoQueue,
    #[error("the queue is full; try again later")]
    QueueFull { max_size: u32 },
    #[error("the event is sold out; join the waiting list to be offered seats that come back")]
    SoldOut,
    #[error("the event is not sold out; join the queue")]
    NotSoldOut,
    #[error("you are not in this event's queue")]
    NotInQueue,
    #[error("this event has a waiting room: reserving needs an admission token")]
    AdmissionRequired,
    #[error("the admission token does not belong to a live admission of yours")]
    AdmissionInvalid,
    #[error("the admission has expired")]
    AdmissionExpired,
    #[error("the admission was already used for a booking")]
    AdmissionSpent,
    #[error("the admission already holds seats ({0}); release them or pay first")]
    AdmissionInUse(ReservationId),
    #[error("an organizer hold names 1 to {MAX_SEATS_PER_WITHHOLD} seats, not {asked}")]
    BadWithholdSize { asked: usize },
    #[error("a hold's label must be 1 to {MAX_LABEL} characters, not blank")]
    BadLabel,
    #[error("customers hold or bought these seats, so they cannot be withheld: {}", join(.0))]
    SeatsInSale(Vec<SeatId>),
    #[error("these seats are already withheld as {label:?}: {}", join(.seats))]
    WithheldOtherwise { label: String, seats: Vec<SeatId> },
}

fn join(seats: &[SeatId]) -> String {
    seats.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// Free text is checked as it will be stored: leading and trailing spaces count.
fn check_text(field: &str, value: &str) -> Result<(), Rejection> {
    if !text_fits(value, MAX_TEXT) {
        return Err(Rejection::InvalidEvent(format!(
            "{field} must be 1 to {MAX_TEXT} characters, not blank"
        )));
    }
    Ok(())
}

/// Decides a command for event `event_id` against its state (`None` if it does not exist yet).
pub fn decide(
    state: Option<&EventState>,
    event_id: EventId,
    command: &Command,
    now: DateTime<Utc>,
) -> Result<Vec<Event>, Rejection> {
    let state = match (state, command) {
        (None, Command::Schedule(info)) => return schedule(info),
        // Only a retry lands here: ids of new events are fresh, or derived from the organizer's
        // Idempotency-Key. The seat map may have changed since, so it is not compared.
        (Some(state), Command::Schedule(info)) if same_event(&state.info, info) => return Ok(vec![]),
        (Some(_), Command::Schedule(info)) => return Err(Rejection::EventExists(info.event_id)),
        (None, Command::PaymentSucceeded { reservation_id, .. } | Command::PaymentFailed { reservation_id, .. }) => {
            return Err(Rejection::UnknownReservation(*reservation_id));
        }
        (None, _) => return Err(Rejection::UnknownEvent(event_id)),
        (Some(state), _) => state,
    };
    match command {
        Command::Schedule(_) => unreachable!("handled above"),
        Command::ChangeSeatMap { organizer, seat_map } => change_seat_map(state, organizer, seat_map, now),
        Command::Reserve {
            customer,
            reservation_id,
            selection,
            idempotency_key,
            admission,
        } => reserve(
            state,
            customer,
            *reservation_id,
            selection,
            idempotency_key,
            *admission,
            now,
        ),
        Command::Release {
            customer,
            reservation_id,
        } => release(state, customer, *reservation_id),
        Command::Cancel {
            customer,
            reservation_id,
        } => cancel(state, customer, *reservation_id, now),
        Command::Expire { reservation_id } => expire(state, *reservation_id, now),
        Command::PaymentSucceeded {
            reservation_id,
            payment,
        } => payment_succeeded(state, *reservation_id, payment, now),
        Command::PaymentFailed {
            reservation_id,
            provider_event_id,
            payment_intent,
            message,
        } => payment_failed(state, *reservation_id, provider_event_id, payment_intent, message),
        Command::OpenQueue { organizer, settings } => open_queue(state, organizer, settings, now),
        Command::JoinQueue { customer } => join_queue(state, customer, now),
        Command::LeaveQueue { customer } => leave_queue(state, customer),
        Command::JoinWaitlist { customer } => join_waitlist(state, customer, now),
        Command::AdvanceQueue { seed } => Ok(advance_queue(state, *seed, now)),
        Command::Withhold {
            organizer,
            seats,
            label,
            idempotency_key,
        } => withhold(state, organizer, seats, label, idempotency_key.as_deref()),
        Command::ReturnWithheld {
            organizer,
            seats,
            idempotency_key,
        } => return_withheld(state, organizer, seats, idempotency_key.as_deref()),
    }
}

/// The organizer gave the same event; only the seat map may since have changed.
fn same_event(a: &EventScheduled, b: &EventScheduled) -> bool {
    a.event_id == b.event_id
        && a.hold_minutes == b.hold_minutes
        && a.max_seats_per_order == b.max_seats_per_order
        && a.max_seats_per_customer == b.max_seats_per_customer
        && a.allow_orphan_seats == b.allow_orphan_seats
        && a.currency == b.currency
        && a.organizer == b.organizer
        && a.title == b.title
        && a.artist == b.artist
        && a.venue == b.venue
        && a.city == b.city
        && a.tags == b.tags
        && a.aliases == b.aliases
        && a.starts_at == b.starts_at
        && a.onsale_at == b.onsale_at
}

fn schedule(info: &EventScheduled) -> Result<Vec<Event>, Rejection> {
    check_text("title", &info.title)?;
    check_text("artist", &info.artist)?;
    check_text("venue", &info.venue)?;
    check_text("city", &info.city)?;
    if info.tags.len() > MAX_TAGS || info.tags.iter().any(|t| !text_fits(t, MAX_TAG)) {
        return Err(Rejection::InvalidEvent(
            "tags: at most 10, each 1 to 40 characters".into(),
        ));
    }
    if info.aliases.len() > 10 {
        return Err(Rejection::InvalidEvent("aliases: at most 10".into()));
    }
    for alias in &info.aliases {
        check_text("each alias", alias)?;
    }
    if info.starts_at <= info.onsale_at {
        return Err(Rejection::InvalidEvent("starts_at must be after onsale_at".into()));
    }
    if info.max_seats_per_order == 0 || info.max_seats_per_order > MAX_SEATS_PER_ORDER {
        return Err(Rejection::InvalidEvent(format!(
            "max_seats_per_order must be 1 to {MAX_SEATS_PER_ORDER}"
        )));
    }
    if let Some(limit) = info.max_seats_per_customer
        && !(u16::from(info.max_seats_per_order)..=MAX_SEATS_PER_CUSTOMER).contains(&limit)
    {
        return Err(Rejection::InvalidEvent(format!(
            "max_seats_per_customer must be max_seats_per_order ({}) to {MAX_SEATS_PER_CUSTOMER}",
            info.max_seats_per_order
        )));
    }
    info.seat_map.validate()?;
    Ok(vec![Event::EventScheduled(info.clone())])
}

fn change_seat_map(
    state: &EventState,
    organizer: &OrganizerId,
    seat_map: &SeatMap,
    now: DateTime<Utc>,
) -> Result<Vec<Event>, Rejection> {
    if &state.info.organizer != organizer {
        return Err(Rejection::NotYourEvent);
    }
    if now >= state.info.onsale_at || !state.reservations.is_empty() {
        return Err(Rejection::OnsaleStarted);
    }
    seat_map.validate()?;
    if *state.info.seat_map == *seat_map {
        return Ok(vec![]);
    }
    Ok(vec![Event::SeatMapChanged(SeatMapChanged {
        seat_map: seat_map.clone().into(),
    })])
}

fn reserve(
    state: &EventState,
    customer: &CustomerId,
    reservation_id: ReservationId,
    selection: &SeatSelection,
    idempotency_key: &str,
    admission: Option<u64>,
    now: DateTime<Utc>,
) -> Result<Vec<Event>, Rejection> {
    if let Some(existing) = state.idempotency.get(&(customer.clone(), idempotency_key.to_owned())) {
        let r = &state.reservations[existing];
        let same = match selection {
            SeatSelection::Explicit(seats) => {
                let asked: HashSet<_> = seats.iter().filter_map(|s| state.layout.index_of(s)).collect();
                asked.len() == seats.len() && asked == r.seats.iter().copied().collect()
            }
            SeatSelection::BestAvailable { section, count } | SeatSelection::BestWith { section, count, .. } => {
                usize::from(*count) == r.seats.len()
                    && r.seats
                        .iter()
                        .all(|&i| state.layout.section_index(section) == Some(state.layout.row_of(i).section as usize))
            }
            SeatSelection::Zone { zone, count } => zones::same_request(state, r, zone, *count),
        };
        return if same {
            Ok(vec![])
        } else {
            Err(Rejection::IdempotencyKeyReused)
        };
    }
    if now < state.info.onsale_at {
        return Err(Rejection::NotOnSale(state.info.onsale_at));
    }
    if now >= state.info.starts_at {
        return Err(Rejection::SalesClosed);
    }
    let admission_ticket = match &state.queue {
        Some(queue) => Some(check_admission(queue, customer, admission, now)?),
        None => None,
    };
    let max = state.info.max_seats_per_order;
    let asked = selection.count();
    if asked == 0 || asked > usize::from(max) {
        return Err(Rejection::BadSeatCount { asked, max });
    }
    check_customer_limit(state, customer, asked)?;
    // Behind a waiting room a fan shops one order at a time, whichever ticket let them in:
    // leaving and joining again gets a new ticket, not a second hold.
    if state.queue.is_some()
        && let Some(held) = state.hold_of(customer)
    {
        return Err(Rejection::AdmissionInUse(held));
    }
    zones::check_selection(state, selection)?;
    let seats: Vec<u32> = match selection {
        SeatSelection::Explicit(ids) => {
            let seats = explicit_seats(state, ids)?;
            if !state.info.allow_orphan_seats {
                let stranded = orphans::stranded_by(state, &seats);
                if !stranded.is_empty() {
                    return Err(Rejection::OrphanSeat(state.seat_ids(&stranded)));
                }
            }
            seats
        }
        SeatSelection::BestAvailable { section, count } => best_with(state, section, *count, SeatNeeds::default())?,
        SeatSelection::BestWith { section, count, needs } => best_with(state, section, *count, *needs)?,
        SeatSelection::Zone { zone, count } => zones::take(state, zone, *count)?,
    };
    // Prices are bounded since they are validated; an event recorded before that may still
    // carry prices whose sum does not fit.
    let amount = checked_sum(seats.iter().map(|&i| state.layout.price_of(i))).ok_or(Rejection::AmountTooLarge)?;
    Ok(vec![Event::SeatsReserved(SeatsReserved {
        reservation_id,
        customer: customer.clone(),
        seats: state.seat_ids(&seats),
        hold_until: now + state.info.hold_minutes.duration(),
        amount: Money {
            amount,
            currency: state.info.currency,
        },
        admission_ticket,
    })])
}

/// The customer may hold `asked` more seats without going over the event's per-customer limit.
fn check_customer_limit(state: &EventState, customer: &CustomerId, asked: usize) -> Result<(), Rejection> {
    let limit = state.info.seats_per_customer();
    let have = state.live_seats_of(customer);
    if have + asked > usize::from(limit) {
        return Err(Rejection::CustomerLimit { limit, have, asked });
    }
    Ok(())
}

/// The ticket whose admission may hold seats now.
fn check_admission(
    queue: &QueueState,
    customer: &CustomerId,
    admission: Option<u64>,
    now: DateTime<Utc>,
) -> Result<u64, Rejection> {
    let ticket = admission.ok_or(Rejection::AdmissionRequired)?;
    let t = queue
        .tickets
        .get(&ticket)
        .filter(|t| &t.customer == customer)
        .ok_or(Rejection::AdmissionInvalid)?;
    match t.status {
        TicketStatus::Admitted { expires_at } if expires_at <= now => Err(Rejection::AdmissionExpired),
        TicketStatus::Admitted { .. } => match t.hold {
            Some(held) => Err(Rejection::AdmissionInUse(held)),
            None => Ok(ticket),
        },
        TicketStatus::Spent => Err(Rejection::AdmissionSpent),
        TicketStatus::Lapsed => Err(Rejection::AdmissionExpired),
        TicketStatus::Waiting | TicketStatus::Left | TicketStatus::SoldOut => Err(Rejection::AdmissionInvalid),
    }
}

fn open_queue(
    state: &EventState,
    organizer: &OrganizerId,
    settings: &QueueSettings,
    now: DateTime<Utc>,
) -> Result<Vec<Event>, Rejection> {
    if &state.info.organizer != organizer {
        return Err(Rejection::NotYourEvent);
    }
    let config = QueueOpened {
        max_size: settings.max_size,
        max_shoppers: settings.max_shoppers,
        admission_secs: settings.admission_secs,
    };
    if state.queue.as_ref().is_some_and(|q| q.config == config) {
        return Ok(vec![]);
    }
    if now >= state.info.onsale_at || !state.reservations.is_empty() {
        return Err(Rejection::OnsaleStarted);
    }
    if settings.max_size == Some(0) {
        return Err(Rejection::InvalidQueue("max_size must be at least 1".into()));
    }
    if settings.max_shoppers == 0 || settings.max_shoppers > 1_000_000 {
        return Err(Rejection::InvalidQueue("max_shoppers must be 1 to 1000000".into()));
    }
    if !(60..=3600).contains(&settings.admission_secs) {
        return Err(Rejection::InvalidQueue("admission_secs must be 60 to 3600".into()));
    }
    Ok(vec![Event::Queue(QueueEvent::Opened(config))])
}

fn join_queue(state: &EventState, customer: &CustomerId, now: DateTime<Utc>) -> Result<Vec<Event>, Rejection> {
    let queue = state.queue.as_ref().ok_or(Rejection::NoQueue)?;
    // A retry, or a fan who is in already: the same ticket.
    if queue.ticket_of(customer).is_some_and(|(_, t)| t.status.is_live()) {
        return Ok(vec![]);
    }
    if now >= state.info.starts_at {
        return Err(Rejection::SalesClosed);
    }
    if queue.sold_out {
        return Err(Rejection::SoldOut);
    }
    if let Some(max_size) = queue.config.max_size
        && queue.waiting >= u64::from(max_size)
    {
        return Err(Rejection::QueueFull { max_size });
    }
    Ok(vec![Event::Queue(QueueEvent::Joined(QueueJoined {
        customer: customer.clone(),
        ticket: queue.next_ticket,
        pre_queue: now < state.info.onsale_at,
    }))])
}

fn leave_queue(state: &EventState, customer: &CustomerId) -> Result<Vec<Event>, Rejection> {
    let queue = state.queue.as_ref().ok_or(Rejection::NoQueue)?;
    let (ticket, t) = queue.ticket_of(customer).ok_or(Rejection::NotInQueue)?;
    if !t.status.is_live() {
        return Ok(vec![]);
    }
    Ok(vec![Event::Queue(QueueEvent::Left(QueueLeft {
        customer: customer.clone(),
        ticket,
    }))])
}

fn join_waitlist(state: &EventState, customer: &CustomerId, now: DateTime<Utc>) -> Result<Vec<Event>, Rejection> {
    let queue = state.queue.as_ref().ok_or(Rejection::NoQueue)?;
    if queue.ticket_of(customer).is_some_and(|(_, t)| t.status.is_live()) {
        return Ok(vec![]);
    }
    if now >= state.info.starts_at {
        return Err(Rejection::SalesClosed);
    }
    if !queue.sold_out {
        return Err(Rejection::NotSoldOut);
    }
    Ok(vec![Event::Queue(QueueEvent::WaitlistJoined(WaitlistJoined {
        customer: customer.clone(),
        ticket: queue.next_ticket,
    }))])
}

/// Moves the waiting room on at `now`. Admission follows the inventory: while fewer than
/// `max_shoppers` are shopping, the next fan in line is let in as long as the admitted fans
/// who hold nothing yet could not, each buying the largest order still sellable
/// ([`orphans::sellable`]), take every free seat already (`unheld * largest < available`).
/// Seats in live holds are not free; a hold that ends frees its seats and the next `advance`
/// admits against them. When no order of any size can be sold and no hold could come back,
/// the event is sold out.
fn advance_queue(state: &EventState, seed: u64, now: DateTime<Utc>) -> Vec<Event> {
    let Some(queue) = &state.queue else { return vec![] };
    let mut events = Vec::new();
    let onsale = now >= state.info.onsale_at;
    // The lottery's order goes before everyone who is in line already.
    let mut lottery = Vec::new();
    if onsale && !queue.shuffled {
        lottery = queue.lottery(seed);
        events.push(Event::Queue(QueueEvent::Shuffled(QueueShuffled {
            seed,
            pre_queue: lottery.len() as u64,
        })));
    }
    let mut lapsed = 0u64;
    for &(expires_at, ticket) in &queue.live {
        if expires_at > now {
            break;
        }
        let t = &queue.tickets[&ticket];
        if t.hold.is_none() {
            lapsed += 1;
            events.push(Event::Queue(QueueEvent::Lapsed(AdmissionLapsed {
                customer: t.customer.clone(),
                ticket,
            })));
        }
    }
    if !onsale || now >= state.info.starts_at {
        return events;
    }
    let available = u64::from(state.counts.available);
    // Scanned only when needed: the largest sellable order is at most `max_seats_per_order`, so
    // while the admitted fans could not take every free seat even with full orders, the next fan
    // is let in without looking at the seats.
    let sizes = std::cell::OnceCell::new();
    let sellable = || *sizes.get_or_init(|| orphans::sellable(state));
    let full_order = u64::from(state.info.max_seats_per_order);
    let room = |unheld: u64| unheld * full_order < available || unheld * u64::from(sellable().largest()) < available;
    let mut shopping = queue.live.len() as u64 - lapsed;
    let mut unheld = queue.unheld() - lapsed;
    let expires_at = now + chrono::Duration::seconds(i64::from(queue.config.admission_secs));
    let waitlist = queue.sold_out;
    let mut next = lottery.into_iter().chain(queue.next_waiting(waitlist));
    let mut waiting_left = queue.waiting;
    while shopping < u64::from(queue.config.max_shoppers) && room(unheld) {
        let Some(ticket) = next.next() else { break };
        let customer = queue.tickets[&ticket].customer.clone();
        events.push(Event::Queue(if waitlist {
            QueueEvent::WaitlistOffered(WaitlistOffered {
                customer,
                ticket,
                expires_at,
            })
        } else {
            waiting_left -= 1;
            QueueEvent::Admitted(FanAdmitted {
                customer,
                ticket,
                expires_at,
            })
        }));
        shopping += 1;
        unheld += 1;
    }
    // No order of any size can be sold and no hold could come back: nothing is left to buy.
    if !queue.sold_out && state.counts.held == 0 && sellable().is_empty() {
        events.push(Event::Queue(QueueEvent::SoldOut(QueueSoldOut {
            waiting: waiting_left,
        })));
    }
    events
}

fn explicit_seats(state: &EventState, ids: &[SeatId]) -> Result<Vec<u32>, Rejection> {
    let mut seen = HashSet::new();
    let mut unknown = Vec::new();
    let mut taken = Vec::new();
    let mut seats = Vec::with_capacity(ids.len());
    for id in ids {
        if !seen.insert(id) {
            return Err(Rejection::DuplicateSeat(id.clone()));
        }
        match state.layout.index_of(id) {
            None => unknown.push(id.clone()),
            Some(i) if state.seats[i as usize] != SeatState::Available => taken.push(id.clone()),
            Some(i) => seats.push(i),
        }
    }
    if !unknown.is_empty() {
        return Err(Rejection::UnknownSeats(unknown));
    }
    if !taken.is_empty() {
        return Err(Rejection::SeatsUnavailable(taken));
    }
    Ok(seats)
}

fn own<'a>(
    state: &'a EventState,
    customer: &CustomerId,
    reservation_id: ReservationId,
) -> Result<&'a super::state::Reservation, Rejection> {
    // Someone else's reservation looks exactly like a missing one: ids do not leak.
    match state.reservations.get(&reservation_id) {
        Some(r) if &r.customer == customer => Ok(r),
        _ => Err(Rejection::UnknownReservation(reservation_id)),
    }
}

fn release(state: &EventState, customer: &CustomerId, reservation_id: ReservationId) -> Result<Vec<Event>, Rejection> {
    let r = own(state, customer, reservation_id)?;
    match r.status {
        ReservationStatus::Held => Ok(vec![Event::SeatsReleased(SeatsReleased {
            reservation_id,
            seats: state.seat_ids(&r.seats),
            reason: ReleaseReason::Released,
        })]),
        ReservationStatus::Released(_) => Ok(vec![]),
        ReservationStatus::Booked => Err(Rejection::AlreadyBooked),
    }
}

fn cancel(
    state: &EventState,
    customer: &CustomerId,
    reservation_id: ReservationId,
    now: DateTime<Utc>,
) -> Result<Vec<Event>, Rejection> {
    let r = own(state, customer, reservation_id)?;
    match r.status {
        ReservationStatus::Booked => {
            if now >= state.info.starts_at {
                return Err(Rejection::SalesClosed);
            }
            let payment = r.payment.clone().expect("a booked reservation has its payment");
            Ok(vec![
                Event::PaymentRefunded(PaymentRefunded {
                    reservation_id,
                    customer: r.customer.clone(),
                    payment,
                    reason: RefundReason::BookingCancelled,
                }),
                Event::SeatsReleased(SeatsReleased {
                    reservation_id,
                    seats: state.seat_ids(&r.seats),
                    reason: ReleaseReason::Refunded,
                }),
            ])
        }
        ReservationStatus::Released(ReleaseReason::Refunded) => Ok(vec![]),
        ReservationStatus::Held => Err(Rejection::NotBooked("held")),
        ReservationStatus::Released(_) => Err(Rejection::NotBooked("released")),
    }
}

fn expire(state: &EventState, reservation_id: ReservationId, now: DateTime<Utc>) -> Result<Vec<Event>, Rejection> {
    match state.reservations.get(&reservation_id) {
        Some(r) if r.status == ReservationStatus::Held && r.hold_until <= now => {
            Ok(vec![Event::SeatsReleased(SeatsReleased {
                reservation_id,
                seats: state.seat_ids(&r.seats),
                reason: ReleaseReason::Expired,
            })])
        }
        Some(_) => Ok(vec![]),
        None => Err(Rejection::UnknownReservation(reservation_id)),
    }
}

fn payment_succeeded(
    state: &EventState,
    reservation_id: ReservationId,
    payment: &Payment,
    now: DateTime<Utc>,
) -> Result<Vec<Event>, Rejection> {
    if state.payments_seen.contains(&payment.provider_event_id) {
        return Ok(vec![]);
    }
    let Some(r) = state.reservations.get(&reservation_id) else {
        return Err(Rejection::UnknownReservation(reservation_id));
    };
    let refund = |reason| {
        Ok(vec![Event::PaymentRefunded(PaymentRefunded {
            reservation_id,
            customer: r.customer.clone(),
            payment: payment.clone(),
            reason,
        })])
    };
    if payment.amount != r.amount {
        return refund(RefundReason::AmountMismatch);
    }
    let book = |late| {
        let mut events = vec![Event::SeatsBooked(SeatsBooked {
            reservation_id,
            customer: r.customer.clone(),
            seats: state.seat_ids(&r.seats),
            payment: payment.clone(),
            late,
        })];
        // The booking uses the admission up (unless it lapsed already, for a late payment).
        let admitted = |t: &u64| {
            state
                .queue
                .as_ref()
                .and_then(|q| q.tickets.get(t))
                .is_some_and(|t| matches!(t.status, TicketStatus::Admitted { .. }))
        };
        if let Some(ticket) = r.admission.filter(admitted) {
            events.push(Event::Queue(QueueEvent::Spent(AdmissionSpent {
                customer: r.customer.clone(),
                ticket,
                reservation_id,
            })));
        }
        Ok(events)
    };
    match r.status {
        // Still holding its seats, even if the deadline passed a moment ago and the timer has
        // not fired yet: nobody else can have them.
        ReservationStatus::Held => book(now > r.hold_until),
        ReservationStatus::Booked | ReservationStatus::Released(ReleaseReason::Refunded) => {
            refund(RefundReason::DuplicatePayment)
        }
        // The customer gave the seats up on purpose; their money goes back.
        ReservationStatus::Released(ReleaseReason::Released) => refund(RefundReason::SeatsTaken),
        // The hold ended (deadline, or an earlier failed attempt): book if the seats are free.
        ReservationStatus::Released(ReleaseReason::Expired | ReleaseReason::PaymentFailed) => {
            if !r.seats.iter().all(|&i| state.seats[i as usize] == SeatState::Available) {
                refund(RefundReason::SeatsTaken)
            } else if check_customer_limit(state, &r.customer, r.seats.len()).is_err() {
                // The customer holds or owns other seats since: booking these too would go over.
                refund(RefundReason::CustomerLimit)
            } else {
                book(true)
            }
        }
    }
}

fn payment_failed(
    state: &EventState,
    reservation_id: ReservationId,
    provider_event_id: &str,
    payment_intent: &str,
    message: &Option<String>,
) -> Result<Vec<Event>, Rejection> {
    if state.payments_seen.contains(provider_event_id) {
        return Ok(vec![]);
    }
    let Some(r) = state.reservations.get(&reservation_id) else {
        return Err(Rejection::UnknownReservation(reservation_id));
    };
    let mut events = vec![Event::PaymentFailed(PaymentFailed {
        reservation_id,
        provider_event_id: provider_event_id.to_owned(),
        payment_intent: payment_intent.to_owned(),
        // The provider's words are informational: what is kept is bounded.
        message: message.as_ref().map(|m| m.chars().take(MAX_PROVIDER_MESSAGE).collect()),
    })];
    if r.status == ReservationStatus::Held {
        events.push(Event::SeatsReleased(SeatsReleased {
            reservation_id,
            seats: state.seat_ids(&r.seats),
            reason: ReleaseReason::PaymentFailed,
        }));
    }
    Ok(events)
}

//! What the write side answers about a reservation, in the API's words.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use frontrow_schema::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::{EventState, Reservation, ReservationStatus, TicketStatus};

/// A reservation as its customer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReservationView {
    pub reservation_id: ReservationId,
    pub event_id: EventId,
    /// `held`, `booked`, `released`, `expired`, `payment_failed` or `refunded`.
    #[schema(value_type = String, example = "held")]
    pub status: Cow<'static, str>,
    pub seats: Vec<SeatId>,
    /// The price of the seats: what the payment must be.
    pub amount: Money,
    /// Until when the seats are held for payment.
    pub hold_until: DateTime<Utc>,
    /// The provider's payment id, once paid.
    pub payment_intent: Option<String>,
    /// Booked by a payment that arrived after the hold had ended.
    pub late_payment: bool,
    /// Payments given back, with why.
    pub refunds: Vec<RefundView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RefundView {
    pub payment_intent: String,
    pub amount: Money,
    /// `seats_taken`, `duplicate_payment`, `amount_mismatch`, `booking_cancelled` or `customer_limit`.
    #[schema(value_type = String, example = "seats_taken")]
    pub reason: RefundReason,
}

pub fn status_name(status: ReservationStatus) -> &'static str {
    match status {
        ReservationStatus::Held => "held",
        ReservationStatus::Booked => "booked",
        ReservationStatus::Released(reason) => reason.as_str(),
    }
}

impl ReservationView {
    pub fn of(state: &EventState, r: &Reservation) -> Self {
        Self {
            reservation_id: r.id,
            event_id: state.event_id(),
            status: status_name(r.status).into(),
            seats: state.seat_ids(&r.seats),
            amount: r.amount,
            hold_until: r.hold_until,
            payment_intent: r.payment.as_ref().map(|p| p.payment_intent.clone()),
            late_payment: r.late,
            refunds: r
                .refunds
                .iter()
                .map(|(p, reason)| RefundView {
                    payment_intent: p.payment_intent.clone(),
                    amount: p.amount,
                    reason: *reason,
                })
                .collect(),
        }
    }
}

/// A fan's place in an event's waiting room, as the writer knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct QueueTicketView {
    pub event_id: EventId,
    /// The queue number: the same for every retry of a join.
    pub ticket: u64,
    /// `waiting`, `admitted`, `spent`, `lapsed`, `left` or `sold_out`.
    #[schema(value_type = String, example = "waiting")]
    pub status: Cow<'static, str>,
    /// On the waiting list of a sold-out event rather than in the queue.
    pub waitlist: bool,
    /// Until when the admission lasts, once admitted.
    pub admitted_until: Option<DateTime<Utc>>,
}

impl QueueTicketView {
    /// The customer's newest ticket at the event, if they have one.
    pub fn of(state: &EventState, customer: &CustomerId) -> Option<Self> {
        let (ticket, t) = state.queue.as_ref()?.ticket_of(customer)?;
        Some(Self {
            event_id: state.event_id(),
            ticket,
            status: t.status.name().into(),
            waitlist: t.waitlist,
            admitted_until: match t.status {
                TicketStatus::Admitted { expires_at } => Some(expires_at),
                _ => None,
            },
        })
    }
}

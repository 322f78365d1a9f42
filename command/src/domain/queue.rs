//! The waiting room of one event: who waits, in which order, who is shopping.
//!
//! [`QueueState`] only records what the log says (`apply`); the rules are in [`super::decide`]
//! (`join`, `leave`, `advance`, ...). The order of the queue is the pre-queue's lottery order
//! (drawn at the onsale instant from a recorded seed) followed by everyone who joined after the
//! onsale, first come first served. Fans are admitted strictly in that order.

use std::collections::{BTreeSet, HashMap, VecDeque};

use chrono::{DateTime, Utc};
use frontrow_schema::*;
use serde::{Deserialize, Serialize};

/// Where one queue ticket is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum TicketStatus {
    /// In line (queue or waiting list).
    Waiting,
    /// Let in (or offered seats from the waiting list) until `expires_at`.
    Admitted { expires_at: DateTime<Utc> },
    /// A booking used the admission.
    Spent,
    /// The admission ran out unused.
    Lapsed,
    /// The fan left before being let in (or gave the admission back).
    Left,
    /// Still waiting when nothing was left to buy.
    SoldOut,
}

impl TicketStatus {
    /// Waiting or admitted: the customer's place is taken.
    pub fn is_live(self) -> bool {
        matches!(self, TicketStatus::Waiting | TicketStatus::Admitted { .. })
    }

    pub fn name(self) -> &'static str {
        match self {
            TicketStatus::Waiting => "waiting",
            TicketStatus::Admitted { .. } => "admitted",
            TicketStatus::Spent => "spent",
            TicketStatus::Lapsed => "lapsed",
            TicketStatus::Left => "left",
            TicketStatus::SoldOut => "sold_out",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    pub customer: CustomerId,
    pub status: TicketStatus,
    /// On the waiting list of a sold-out event rather than in the queue.
    pub waitlist: bool,
    /// The reservation this admission holds seats with right now (one at a time).
    pub hold: Option<ReservationId>,
}

/// One event's waiting room as the log made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueState {
    pub config: QueueOpened,
    pub tickets: HashMap<u64, Ticket>,
    /// Each customer's newest ticket.
    pub current: HashMap<CustomerId, u64>,
    /// Pre-queue tickets in arrival order, until the lottery puts them in line.
    pub pre_queue: Vec<u64>,
    pub shuffled: bool,
    /// The queue in admission order. Tickets that left stay until they reach the front.
    pub line: VecDeque<u64>,
    /// The waiting list in order, same rule.
    pub waitlist: VecDeque<u64>,
    /// Fans waiting in the queue (pre-queue included, waiting list not).
    pub waiting: u64,
    pub next_ticket: u64,
    /// Live admissions by expiry.
    pub live: BTreeSet<(DateTime<Utc>, u64)>,
    /// Live admissions that hold seats right now.
    pub holding: u64,
    pub sold_out: bool,
    /// Admissions and waiting-list offers so far, in order.
    pub admitted: u64,
}

impl QueueState {
    pub fn opened(config: QueueOpened) -> Self {
        Self {
            config,
            tickets: HashMap::new(),
            current: HashMap::new(),
            pre_queue: Vec::new(),
            shuffled: false,
            line: VecDeque::new(),
            waitlist: VecDeque::new(),
            waiting: 0,
            next_ticket: 1,
            live: BTreeSet::new(),
            holding: 0,
            sold_out: false,
            admitted: 0,
        }
    }

    /// The customer's newest ticket and its number.
    pub fn ticket_of(&self, customer: &CustomerId) -> Option<(u64, &Ticket)> {
        let n = *self.current.get(customer)?;
        Some((n, &self.tickets[&n]))
    }

    /// The pre-queue's waiting tickets in lottery order for `seed`.
    pub fn lottery(&self, seed: u64) -> Vec<u64> {
        let mut order: Vec<u64> = self
            .pre_queue
            .iter()
            .copied()
            .filter(|t| self.tickets[t].status == TicketStatus::Waiting)
            .collect();
        lottery_order(seed, &mut order);
        order
    }

    /// Waiting tickets of the queue (or of the waiting list) in admission order.
    pub fn next_waiting(&self, waitlist: bool) -> impl Iterator<Item = u64> + '_ {
        let line = if waitlist { &self.waitlist } else { &self.line };
        line.iter()
            .copied()
            .filter(|t| self.tickets[t].status == TicketStatus::Waiting)
    }

    /// Live admissions that hold no seats.
    pub fn unheld(&self) -> u64 {
        self.live.len() as u64 - self.holding
    }

    pub fn apply(&mut self, event: &QueueEvent) {
        match event {
            QueueEvent::Opened(config) => self.config = config.clone(),
            QueueEvent::Joined(e) => {
                self.add(e.ticket, &e.customer, false);
                if e.pre_queue && !self.shuffled {
                    self.pre_queue.push(e.ticket);
                } else {
                    self.line.push_back(e.ticket);
                }
                self.waiting += 1;
            }
            QueueEvent::Shuffled(e) => {
                let order = self.lottery(e.seed);
                for t in order.into_iter().rev() {
                    self.line.push_front(t);
                }
                self.pre_queue.clear();
                self.shuffled = true;
            }
            QueueEvent::Admitted(FanAdmitted { ticket, expires_at, .. })
            | QueueEvent::WaitlistOffered(WaitlistOffered { ticket, expires_at, .. }) => {
                let waitlist = matches!(event, QueueEvent::WaitlistOffered(_));
                if let Some(t) = self.tickets.get_mut(ticket) {
                    t.status = TicketStatus::Admitted {
                        expires_at: *expires_at,
                    };
                    self.live.insert((*expires_at, *ticket));
                    self.admitted += 1;
                    if !waitlist {
                        self.waiting -= 1;
                    }
                }
                self.trim(waitlist);
            }
            QueueEvent::Lapsed(AdmissionLapsed { ticket, .. }) => self.end(*ticket, TicketStatus::Lapsed),
            QueueEvent::Spent(AdmissionSpent { ticket, .. }) => self.end(*ticket, TicketStatus::Spent),
            QueueEvent::Left(QueueLeft { ticket, .. }) => {
                if let Some(t) = self.tickets.get(ticket)
                    && t.status == TicketStatus::Waiting
                    && !t.waitlist
                {
                    self.waiting -= 1;
                }
                self.end(*ticket, TicketStatus::Left);
                self.trim(false);
                self.trim(true);
            }
            QueueEvent::SoldOut(_) => {
                self.sold_out = true;
                for t in self.line.drain(..).chain(self.pre_queue.drain(..)) {
                    let ticket = self.tickets.get_mut(&t).expect("lined tickets exist");
                    if ticket.status == TicketStatus::Waiting {
                        ticket.status = TicketStatus::SoldOut;
                    }
                }
                self.waiting = 0;
            }
            QueueEvent::WaitlistJoined(e) => {
                self.add(e.ticket, &e.customer, true);
                self.waitlist.push_back(e.ticket);
            }
        }
    }

    fn add(&mut self, ticket: u64, customer: &CustomerId, waitlist: bool) {
        self.tickets.insert(
            ticket,
            Ticket {
                customer: customer.clone(),
                status: TicketStatus::Waiting,
                waitlist,
                hold: None,
            },
        );
        self.current.insert(customer.clone(), ticket);
        self.next_ticket = self.next_ticket.max(ticket + 1);
    }

    /// Ends a ticket's waiting or admission.
    fn end(&mut self, ticket: u64, to: TicketStatus) {
        let Some(t) = self.tickets.get_mut(&ticket) else { return };
        if let TicketStatus::Admitted { expires_at } = t.status {
            self.live.remove(&(expires_at, ticket));
            if t.hold.is_some() {
                self.holding -= 1;
            }
        }
        if t.status.is_live() {
            t.status = to;
        }
    }

    /// Drops tickets that are no longer waiting from the front of a line.
    fn trim(&mut self, waitlist: bool) {
        let line = if waitlist { &mut self.waitlist } else { &mut self.line };
        while let Some(front) = line.front() {
            if self.tickets[front].status == TicketStatus::Waiting {
                break;
            }
            line.pop_front();
        }
    }

    /// A reservation now holds seats with this ticket's admission.
    pub(super) fn hold(&mut self, ticket: u64, reservation: ReservationId) {
        if let Some(t) = self.tickets.get_mut(&ticket)
            && t.hold.is_none()
        {
            t.hold = Some(reservation);
            if matches!(t.status, TicketStatus::Admitted { .. }) {
                self.holding += 1;
            }
        }
    }

    /// The reservation's hold ended (booked, released, expired).
    pub(super) fn unhold(&mut self, ticket: u64, reservation: ReservationId) {
        if let Some(t) = self.tickets.get_mut(&ticket)
            && t.hold == Some(reservation)
        {
            t.hold = None;
            if matches!(t.status, TicketStatus::Admitted { .. }) {
                self.holding -= 1;
            }
        }
    }
}

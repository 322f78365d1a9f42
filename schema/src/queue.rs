//! The virtual waiting room's facts, and the lottery that orders its pre-queue.
//!
//! An event with a queue records every step of it in the log: the organizer opens it
//! ([`QueueOpened`]), fans join and get a ticket number ([`QueueJoined`]), the fans who came
//! before the onsale are shuffled at the onsale instant with a recorded seed ([`QueueShuffled`],
//! the order follows from the seed alone through [`lottery_order`], so anyone can audit it), the
//! writer admits fans in queue order as the inventory allows ([`FanAdmitted`]), an admission is
//! spent by a booking ([`AdmissionSpent`]) or lapses ([`AdmissionLapsed`]), fans may leave
//! ([`QueueLeft`]), and when nothing is left to buy everyone still waiting is told
//! ([`QueueSoldOut`]). After that fans may join a waiting list ([`WaitlistJoined`]) and seats
//! that come back are offered to them in order ([`WaitlistOffered`]).
//!
//! Ticket numbers count joins (queue and waiting list) from 1 per event; they never repeat.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{CustomerId, ReservationId};

/// Every waiting-room fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueEvent {
    Opened(QueueOpened),
    Joined(QueueJoined),
    Shuffled(QueueShuffled),
    Admitted(FanAdmitted),
    Lapsed(AdmissionLapsed),
    Spent(AdmissionSpent),
    Left(QueueLeft),
    SoldOut(QueueSoldOut),
    WaitlistJoined(WaitlistJoined),
    WaitlistOffered(WaitlistOffered),
}

impl QueueEvent {
    /// The CloudEvents `type` of this fact.
    pub fn type_name(&self) -> &'static str {
        match self {
            QueueEvent::Opened(_) => "frontrow.queue.opened",
            QueueEvent::Joined(_) => "frontrow.queue.joined",
            QueueEvent::Shuffled(_) => "frontrow.queue.shuffled",
            QueueEvent::Admitted(_) => "frontrow.queue.admitted",
            QueueEvent::Lapsed(_) => "frontrow.queue.admission_lapsed",
            QueueEvent::Spent(_) => "frontrow.queue.admission_spent",
            QueueEvent::Left(_) => "frontrow.queue.left",
            QueueEvent::SoldOut(_) => "frontrow.queue.sold_out",
            QueueEvent::WaitlistJoined(_) => "frontrow.waitlist.joined",
            QueueEvent::WaitlistOffered(_) => "frontrow.waitlist.offered",
        }
    }
}

/// The organizer put the event behind a waiting room. From now on reserving needs an admission
/// token. Fans who join before `onsale_at` (the event's) form the pre-queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueOpened {
    /// Most fans waiting at once; joining beyond it is refused. `None`: no limit.
    pub max_size: Option<u32>,
    /// Most admitted fans shopping at once.
    pub max_shoppers: u32,
    /// How long an admission lasts, in seconds.
    pub admission_secs: u32,
}

/// A fan joined the queue and got `ticket`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueJoined {
    pub customer: CustomerId,
    pub ticket: u64,
    /// Joined before the onsale: the place is drawn by the lottery, not by arrival.
    pub pre_queue: bool,
}

/// At the onsale instant the pre-queue was put in the order [`lottery_order`] gives for `seed`
/// and the pre-queue's tickets in ascending order; that order goes before everyone who joined
/// after the onsale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueShuffled {
    pub seed: u64,
    /// How many pre-queue fans were waiting when it was drawn (for the audit).
    pub pre_queue: u64,
}

/// A fan was let in: they may reserve with an admission token until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FanAdmitted {
    pub customer: CustomerId,
    pub ticket: u64,
    #[serde(deserialize_with = "crate::envelope::rfc3339")]
    pub expires_at: DateTime<Utc>,
}

/// An admission ended unused (its time ran out with no seats held): its place in the shopping
/// capacity is free again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmissionLapsed {
    pub customer: CustomerId,
    pub ticket: u64,
}

/// A booking used the admission up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmissionSpent {
    pub customer: CustomerId,
    pub ticket: u64,
    pub reservation_id: ReservationId,
}

/// A fan left the queue (or the waiting list) before being let in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueLeft {
    pub customer: CustomerId,
    pub ticket: u64,
}

/// Nothing is left to buy: no seat free and no hold that could come back. Every fan still
/// waiting in the queue is told so; later fans may join the waiting list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueSoldOut {
    /// Fans who were still waiting and were told.
    pub waiting: u64,
}

/// A fan asked to be told when seats of a sold-out event come back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitlistJoined {
    pub customer: CustomerId,
    pub ticket: u64,
}

/// Seats came back and were offered to a waiting-list fan, who may reserve with an admission
/// token until `expires_at` (it lapses and is spent like an admission).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitlistOffered {
    pub customer: CustomerId,
    pub ticket: u64,
    #[serde(deserialize_with = "crate::envelope::rfc3339")]
    pub expires_at: DateTime<Utc>,
}

/// The order of a pre-queue drawn with `seed`: `tickets` (ascending) permuted by a Fisher-Yates
/// shuffle driven by SplitMix64. Fixed here, independent of any crate's RNG, so a seed in the
/// log gives the same order forever.
pub fn lottery_order(seed: u64, tickets: &mut [u64]) {
    tickets.sort_unstable();
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..tickets.len()).rev() {
        // Multiply-shift maps the 64-bit draw onto 0..=i without modulo bias worth speaking of.
        let j = ((u128::from(next()) * (i as u128 + 1)) >> 64) as usize;
        tickets.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lottery_is_a_permutation_fixed_by_its_seed() {
        let mut a: Vec<u64> = (1..=1000).rev().collect();
        let mut b: Vec<u64> = (1..=1000).collect();
        lottery_order(42, &mut a);
        lottery_order(42, &mut b);
        assert_eq!(a, b, "same seed, same tickets: same order whatever order they came in");
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (1..=1000).collect::<Vec<_>>());
        assert_ne!(a, sorted, "a thousand tickets do not stay sorted");
        let mut c: Vec<u64> = (1..=1000).collect();
        lottery_order(43, &mut c);
        assert_ne!(a, c);
        // Pinned: the order for a seed must never change, or old logs would replay differently.
        let mut pinned: Vec<u64> = (1..=8).collect();
        lottery_order(7, &mut pinned);
        assert_eq!(pinned, PINNED_SEED_7);
    }

    const PINNED_SEED_7: [u64; 8] = [8, 5, 7, 2, 3, 6, 1, 4];
}

//! One event's waiting room as a query node sees it: places, people ahead, the pace of
//! admissions.
//!
//! [`QueueLive`] follows the same `frontrow.queue.*` facts as the writer and keeps what a fan
//! asks about: their ticket's status, how many waiting fans are ahead of them (a Fenwick tree
//! over places in line, so it is O(log n) however long the queue), and an estimated wait from
//! the rate of the most recent admissions. The pre-queue's order is unknown until the lottery
//! is drawn; it is then derived from the recorded seed exactly as the writer derived it.

use std::collections::{HashMap, VecDeque};

use chrono::{DateTime, Utc};
use frontrow_schema::{CustomerId, QueueEvent, lottery_order};

/// How many recent admissions the wait estimate is taken from.
const RATE_WINDOW: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveStatus {
    Waiting,
    Admitted { until: DateTime<Utc> },
    Spent,
    Lapsed,
    Left,
    SoldOut,
}

impl LiveStatus {
    pub fn name(self) -> &'static str {
        match self {
            LiveStatus::Waiting => "waiting",
            LiveStatus::Admitted { .. } => "admitted",
            LiveStatus::Spent => "spent",
            LiveStatus::Lapsed => "lapsed",
            LiveStatus::Left => "left",
            LiveStatus::SoldOut => "sold_out",
        }
    }
}

#[derive(Debug, Clone)]
struct LiveTicket {
    status: LiveStatus,
    waitlist: bool,
    pre_queue: bool,
}

/// Counts of waiting fans by place in line.
#[derive(Debug, Default)]
struct Line {
    order: Vec<u64>,
    place: HashMap<u64, usize>,
    /// Fenwick tree over places: 1 where the fan still waits.
    tree: Vec<i64>,
}

impl Line {
    fn push(&mut self, ticket: u64) {
        self.place.insert(ticket, self.order.len());
        self.order.push(ticket);
        // Growing a Fenwick tree by one: the new node covers a range ending at itself.
        let i = self.tree.len() + 1;
        let low = i & i.wrapping_neg();
        let mut sum = 1;
        let mut j = i - 1;
        while j > i - low {
            sum += self.tree[j - 1];
            j -= j & j.wrapping_neg();
        }
        self.tree.push(sum);
    }

    fn remove(&mut self, ticket: u64) {
        let Some(&p) = self.place.get(&ticket) else { return };
        let mut i = p + 1;
        while i <= self.tree.len() {
            self.tree[i - 1] -= 1;
            i += i & i.wrapping_neg();
        }
    }

    /// Waiting fans before place `p`.
    fn before(&self, p: usize) -> u64 {
        let mut i = p;
        let mut sum = 0;
        while i > 0 {
            sum += self.tree[i - 1];
            i -= i & i.wrapping_neg();
        }
        sum as u64
    }

    fn ahead_of(&self, ticket: u64) -> Option<u64> {
        self.place.get(&ticket).map(|&p| self.before(p))
    }

    fn rebuild(&mut self, order: Vec<u64>, waiting: impl Fn(u64) -> bool) {
        *self = Line::default();
        for t in order {
            self.push(t);
            if !waiting(t) {
                self.remove(t);
            }
        }
    }
}

/// A fan's place in the waiting room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketStatus {
    pub ticket: u64,
    pub status: LiveStatus,
    pub waitlist: bool,
    /// Joined before the onsale and the lottery is not drawn yet: no place yet.
    pub awaiting_lottery: bool,
    /// Waiting fans ahead of this one (once placed).
    pub ahead: Option<u64>,
    /// Estimated seconds until admission, from the recent admission rate.
    pub eta_secs: Option<u64>,
    pub sold_out: bool,
}

/// An event's waiting room, from the log.
#[derive(Debug, Default)]
pub struct QueueLive {
    tickets: HashMap<u64, LiveTicket>,
    current: HashMap<CustomerId, u64>,
    pre_queue: Vec<u64>,
    shuffled: bool,
    line: Line,
    waitlist: Line,
    sold_out: bool,
    /// When the most recent admissions happened.
    recent: VecDeque<DateTime<Utc>>,
    pub waiting: u64,
    pub admitted: u64,
}

impl QueueLive {
    /// Applies one fact; answers whether it can change what a status stream shows to anyone but
    /// a fan joining for the first time. A first join appends a fan behind everyone (or to the
    /// unordered pre-queue) and leaves every other fan's place, wait and flags as they were,
    /// and that fan's own stream opens after the join, so it wakes no stream. In a flash crowd
    /// nearly every fact is a first join.
    pub fn apply(&mut self, event: &QueueEvent, time: DateTime<Utc>) -> bool {
        let first_join = match event {
            QueueEvent::Joined(e) => !self.current.contains_key(&e.customer),
            QueueEvent::WaitlistJoined(e) => !self.current.contains_key(&e.customer),
            _ => false,
        };
        self.record(event, time);
        !first_join
    }

    fn record(&mut self, event: &QueueEvent, time: DateTime<Utc>) {
        match event {
            QueueEvent::Opened(_) => {}
            QueueEvent::Joined(e) => {
                let pre_queue = e.pre_queue && !self.shuffled;
                self.add(e.ticket, &e.customer, false, pre_queue);
                if pre_queue {
                    self.pre_queue.push(e.ticket);
                } else {
                    self.line.push(e.ticket);
                }
                self.waiting += 1;
            }
            QueueEvent::Shuffled(e) => {
                let mut order: Vec<u64> = self
                    .pre_queue
                    .drain(..)
                    .filter(|t| self.tickets[t].status == LiveStatus::Waiting)
                    .collect();
                lottery_order(e.seed, &mut order);
                for t in &order {
                    if let Some(ticket) = self.tickets.get_mut(t) {
                        ticket.pre_queue = false;
                    }
                }
                order.extend(self.line.order.iter().copied());
                let tickets = &self.tickets;
                self.line.rebuild(order, |t| tickets[&t].status == LiveStatus::Waiting);
                self.shuffled = true;
            }
            QueueEvent::Admitted(e) => self.admit(e.ticket, e.expires_at, time),
            QueueEvent::WaitlistOffered(e) => self.admit(e.ticket, e.expires_at, time),
            QueueEvent::Lapsed(e) => self.end(e.ticket, LiveStatus::Lapsed),
            QueueEvent::Spent(e) => self.end(e.ticket, LiveStatus::Spent),
            QueueEvent::Left(e) => self.end(e.ticket, LiveStatus::Left),
            QueueEvent::SoldOut(_) => {
                self.sold_out = true;
                let waiting: Vec<u64> = self
                    .tickets
                    .iter()
                    .filter(|(_, t)| t.status == LiveStatus::Waiting && !t.waitlist)
                    .map(|(n, _)| *n)
                    .collect();
                for t in waiting {
                    self.end(t, LiveStatus::SoldOut);
                }
            }
            QueueEvent::WaitlistJoined(e) => {
                self.add(e.ticket, &e.customer, true, false);
                self.waitlist.push(e.ticket);
            }
        }
    }

    fn add(&mut self, ticket: u64, customer: &CustomerId, waitlist: bool, pre_queue: bool) {
        self.tickets.insert(
            ticket,
            LiveTicket {
                status: LiveStatus::Waiting,
                waitlist,
                pre_queue,
            },
        );
        self.current.insert(customer.clone(), ticket);
    }

    fn admit(&mut self, ticket: u64, until: DateTime<Utc>, time: DateTime<Utc>) {
        if let Some(t) = self.tickets.get(&ticket)
            && t.status == LiveStatus::Waiting
        {
            self.leave_line(ticket);
            self.tickets.get_mut(&ticket).expect("present").status = LiveStatus::Admitted { until };
            self.admitted += 1;
            self.recent.push_back(time);
            if self.recent.len() > RATE_WINDOW {
                self.recent.pop_front();
            }
        }
    }

    fn end(&mut self, ticket: u64, to: LiveStatus) {
        let Some(status) = self.tickets.get(&ticket).map(|t| t.status) else {
            return;
        };
        if status == LiveStatus::Waiting {
            self.leave_line(ticket);
        }
        if matches!(status, LiveStatus::Waiting | LiveStatus::Admitted { .. }) {
            self.tickets.get_mut(&ticket).expect("present").status = to;
        }
    }

    fn leave_line(&mut self, ticket: u64) {
        let t = &self.tickets[&ticket];
        if t.waitlist {
            self.waitlist.remove(ticket);
        } else {
            self.waiting -= 1;
            self.line.remove(ticket);
        }
    }

    /// Admissions per second over the recent window.
    fn rate(&self) -> Option<f64> {
        let (first, last) = (self.recent.front()?, self.recent.back()?);
        let secs = (*last - *first).num_milliseconds() as f64 / 1000.0;
        (self.recent.len() >= 2 && secs > 0.0).then(|| (self.recent.len() - 1) as f64 / secs)
    }

    /// The customer's newest ticket and where it stands.
    pub fn status_of(&self, customer: &CustomerId) -> Option<TicketStatus> {
        let &ticket = self.current.get(customer)?;
        let t = &self.tickets[&ticket];
        let waiting = t.status == LiveStatus::Waiting;
        let ahead = if !waiting || t.pre_queue {
            None
        } else if t.waitlist {
            self.waitlist.ahead_of(ticket)
        } else {
            self.line.ahead_of(ticket)
        };
        let eta_secs = ahead.and_then(|a| self.rate().map(|r| (a as f64 / r).ceil() as u64));
        Some(TicketStatus {
            ticket,
            status: t.status,
            waitlist: t.waitlist,
            awaiting_lottery: waiting && t.pre_queue,
            ahead,
            eta_secs,
            sold_out: self.sold_out,
        })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use frontrow_schema::*;

    use super::*;

    fn who(n: u64) -> CustomerId {
        CustomerId::parse(&format!("fan{n}")).unwrap()
    }

    #[test]
    fn people_ahead_follow_the_lottery_then_arrival_and_skip_leavers() {
        let t0 = Utc.with_ymd_and_hms(2026, 3, 1, 10, 0, 0).unwrap();
        let mut q = QueueLive::default();
        for n in 1..=6 {
            q.apply(
                &QueueEvent::Joined(QueueJoined {
                    customer: who(n),
                    ticket: n,
                    pre_queue: n <= 4,
                }),
                t0,
            );
        }
        assert!(q.status_of(&who(1)).unwrap().awaiting_lottery);
        assert_eq!(
            q.status_of(&who(5)).unwrap().ahead,
            Some(0),
            "before the draw, only post-onsale fans are placed"
        );
        q.apply(&QueueEvent::Shuffled(QueueShuffled { seed: 9, pre_queue: 4 }), t0);
        let mut order = vec![1, 2, 3, 4];
        lottery_order(9, &mut order);
        order.extend([5, 6]);
        for (i, &t) in order.iter().enumerate() {
            assert_eq!(q.status_of(&who(t)).unwrap().ahead, Some(i as u64));
        }
        // The second in line leaves: everyone behind moves up one.
        q.apply(
            &QueueEvent::Left(QueueLeft {
                customer: who(order[1]),
                ticket: order[1],
            }),
            t0,
        );
        assert_eq!(q.status_of(&who(order[2])).unwrap().ahead, Some(1));
        // Admissions every 2 seconds: a fan 3 places back waits about 6 seconds.
        for (i, &t) in order[..1].iter().chain(&order[2..4]).enumerate() {
            let until = t0 + chrono::Duration::minutes(10);
            q.apply(
                &QueueEvent::Admitted(FanAdmitted {
                    customer: who(t),
                    ticket: t,
                    expires_at: until,
                }),
                t0 + chrono::Duration::seconds(2 * i as i64),
            );
        }
        let last = q.status_of(&who(6)).unwrap();
        assert_eq!((last.ahead, last.eta_secs), (Some(1), Some(2)));
        assert_eq!(q.waiting, 2);
    }

    /// A random onsale's facts, made to be valid: fans join (before and after the draw),
    /// rejoin after leaving, leave, are admitted, spend or lapse; the event sells out and a
    /// waiting list forms.
    fn random_facts(seed: u64, count: usize) -> Vec<QueueEvent> {
        let mut rng = seed.max(1);
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let until = Utc.with_ymd_and_hms(2026, 3, 1, 11, 0, 0).unwrap();
        let (mut facts, mut ticket, mut shuffled, mut sold_out) = (Vec::new(), 0, false, false);
        let mut tickets: Vec<(u64, u64)> = Vec::new();
        while facts.len() < count {
            let n = next(12) + 1;
            let customer = who(n);
            let fact = match next(10) {
                0..=4 => {
                    ticket += 1;
                    tickets.push((n, ticket));
                    if sold_out {
                        QueueEvent::WaitlistJoined(WaitlistJoined { customer, ticket })
                    } else {
                        QueueEvent::Joined(QueueJoined {
                            customer,
                            ticket,
                            pre_queue: !shuffled,
                        })
                    }
                }
                5 if !shuffled => {
                    shuffled = true;
                    QueueEvent::Shuffled(QueueShuffled { seed, pre_queue: 0 })
                }
                9 if shuffled && !sold_out && facts.len() > count / 2 => {
                    sold_out = true;
                    QueueEvent::SoldOut(QueueSoldOut { waiting: 0 })
                }
                k if !tickets.is_empty() => {
                    let (n, ticket) = tickets[next(tickets.len() as u64) as usize];
                    let customer = who(n);
                    match k {
                        5 | 6 if sold_out => QueueEvent::WaitlistOffered(WaitlistOffered {
                            customer,
                            ticket,
                            expires_at: until,
                        }),
                        5 | 6 => QueueEvent::Admitted(FanAdmitted {
                            customer,
                            ticket,
                            expires_at: until,
                        }),
                        7 => QueueEvent::Left(QueueLeft { customer, ticket }),
                        8 => QueueEvent::Lapsed(AdmissionLapsed { customer, ticket }),
                        _ => QueueEvent::Spent(AdmissionSpent {
                            customer,
                            ticket,
                            reservation_id: ReservationId::new(),
                        }),
                    }
                }
                _ => continue,
            };
            facts.push(fact);
        }
        facts
    }

    #[test]
    fn only_a_fact_that_changes_someones_status_wakes_the_streams() {
        let t0 = Utc.with_ymd_and_hms(2026, 3, 1, 10, 0, 0).unwrap();
        let mut quiet = 0;
        for seed in 1..=40 {
            let mut q = QueueLive::default();
            for (i, fact) in random_facts(seed, 300).into_iter().enumerate() {
                let statuses = |q: &QueueLive| (1..=12).map(|n| q.status_of(&who(n))).collect::<Vec<_>>();
                let before = statuses(&q);
                let wakes = q.apply(&fact, t0 + chrono::Duration::seconds(i as i64));
                if !wakes {
                    quiet += 1;
                    let after = statuses(&q);
                    let changed: Vec<usize> = (0..12).filter(|&k| before[k] != after[k]).collect();
                    // Only the joiner's own status appears, and it had none before.
                    assert!(
                        changed.len() <= 1,
                        "seed {seed}, fact {i} ({fact:?}) changed {changed:?}"
                    );
                    for k in changed {
                        assert_eq!(before[k], None, "seed {seed}, fact {i}: a rejoin must wake the streams");
                    }
                }
            }
        }
        // Each of the 12 fans joins for the first time once per seed (or never).
        assert!(quiet > 40 * 8, "the first joins were quiet ({quiet})");
    }
}

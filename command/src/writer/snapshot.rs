//! A partition writer's snapshot: its whole state, in the format the journal stores.
//!
//! Writers store version 2, the binary layout of `frontrow_schema::snapshot` (whose reader the
//! query side uses for seats): per event its schedule as JSON, each reservation's seats and
//! status, the withheld seats, and behind lengths the parts only a writer reads: a
//! reservation's id, customer, amount, deadline, payments and keys, and the event's schedule
//! key, sequence, payments seen, waiting room and organizer request keys. Version 1 (JSON)
//! is still read, so a node restores from what an older build stored.
//!
//! `tests/golden/partition_snapshot_v2.bin` pins the bytes, `partition_snapshot_v1.json` the
//! old format (see `golden.rs`).

use frontrow_journal::Offset;
use std::sync::Arc;

use frontrow_schema::snapshot::binary::{Compact, Input, Malformed, put_list};
use frontrow_schema::snapshot::{self as format, SnapshotError};

use crate::domain::{EventSnapshot, QueueState, Reservation, Ticket, TicketStatus};

/// A partition's state as of `last`: restoring it and reading on from `next` equals a replay.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct PartitionSnapshot {
    pub version: u32,
    /// The offset of the last record the state includes.
    pub last: Option<Offset>,
    /// Where reading continues after the snapshot.
    pub next: Offset,
    pub events: Vec<EventSnapshot>,
}

impl PartitionSnapshot {
    /// The bytes the journal stores (version 2).
    pub fn encode(&self) -> serde_json::Result<Vec<u8>> {
        let mut out = Vec::new();
        format::put_binary_header(&mut out, self.last, self.next, self.events.len());
        for event in &self.events {
            put_event(&mut out, event)?;
        }
        Ok(out)
    }

    /// A snapshot read back from the journal: version 2, or version 1 (JSON).
    pub fn decode(bytes: &[u8]) -> Result<Self, SnapshotError> {
        let Some(mut header) = format::binary_header(bytes)? else {
            let snapshot: Self = serde_json::from_slice(bytes)?;
            if snapshot.version != format::JSON_SNAPSHOT_VERSION {
                return Err(SnapshotError::Version(snapshot.version));
            }
            return Ok(snapshot);
        };
        let events = (0..header.count)
            .map(|_| take_event(&mut header.events))
            .collect::<Result<_, _>>()?;
        header.events.finish("the last event")?;
        Ok(Self {
            version: format::PARTITION_SNAPSHOT_VERSION,
            last: header.last,
            next: header.next,
            events,
        })
    }
}

/// Writes one event, its reservations and payments sorted, so one state gives one encoding.
fn put_event(out: &mut Vec<u8>, event: &EventSnapshot) -> serde_json::Result<()> {
    let mut sorted: Vec<&Reservation> = event.reservations.iter().map(|r| &**r).collect();
    sorted.sort_unstable_by_key(|r| r.id);
    let mut payments_seen: Vec<&String> = event.payments_seen.iter().collect();
    payments_seen.sort_unstable();
    let reservations = sorted.into_iter().map(|r| {
        let part = move |out: &mut Vec<u8>| {
            r.id.put(out);
            r.customer.put(out);
            r.amount.put(out);
            r.hold_until.put(out);
            r.payment.put(out);
            r.refunds.put(out);
            r.late.put(out);
            r.idempotency_key.put(out);
            r.admission.put(out);
        };
        (r.seats.as_slice(), r.status, part)
    });
    format::put_event(out, &event.info, reservations, &event.withheld, |out| {
        event.schedule_key.put(out);
        event.sequence.put(out);
        put_list(out, payments_seen.into_iter());
        event.queue.put(out);
        event.organizer_requests.put(out);
    })
}

fn take_event(events: &mut Input<'_>) -> Result<EventSnapshot, SnapshotError> {
    let (event_id, entry) = format::take_event(events)?;
    let entry = format::read_entry(entry)?;
    if entry.info.event_id != event_id {
        return Err(Malformed(format!("the entry of {event_id} schedules {}", entry.info.event_id)).into());
    }
    let reservations = entry
        .reservations
        .into_iter()
        .map(|r| {
            let mut part = r.writer;
            let reservation = Reservation {
                id: part.take()?,
                customer: part.take()?,
                seats: r.seats,
                amount: part.take()?,
                hold_until: part.take()?,
                status: r.status,
                payment: part.take()?,
                refunds: part.take()?,
                late: part.take()?,
                idempotency_key: part.take()?,
                admission: part.take()?,
            };
            part.finish("a reservation")?;
            Ok(Arc::new(reservation))
        })
        .collect::<Result<_, Malformed>>()?;
    let mut part = entry.writer;
    let snapshot = EventSnapshot {
        info: entry.info,
        schedule_key: part.take()?,
        sequence: part.take()?,
        reservations,
        payments_seen: part.take()?,
        queue: part.take()?,
        withheld: entry.withheld,
        organizer_requests: part.take()?,
    };
    part.finish("an event")?;
    Ok(snapshot)
}

impl Compact for TicketStatus {
    fn put(&self, out: &mut Vec<u8>) {
        match self {
            TicketStatus::Waiting => out.push(0),
            TicketStatus::Admitted { expires_at } => {
                out.push(1);
                expires_at.put(out);
            }
            TicketStatus::Spent => out.push(2),
            TicketStatus::Lapsed => out.push(3),
            TicketStatus::Left => out.push(4),
            TicketStatus::SoldOut => out.push(5),
        }
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        Ok(match input.byte()? {
            0 => TicketStatus::Waiting,
            1 => TicketStatus::Admitted {
                expires_at: input.take()?,
            },
            2 => TicketStatus::Spent,
            3 => TicketStatus::Lapsed,
            4 => TicketStatus::Left,
            5 => TicketStatus::SoldOut,
            b => return Err(Malformed(format!("{b} is not a ticket status"))),
        })
    }
}

frontrow_schema::compact_struct!(Ticket {
    customer,
    status,
    waitlist,
    hold
});

frontrow_schema::compact_struct!(QueueState {
    config,
    tickets,
    current,
    pre_queue,
    shuffled,
    line,
    waitlist,
    waiting,
    next_ticket,
    live,
    holding,
    sold_out,
    admitted
});

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `state` as a snapshot stores it and a restore reads it back.
    pub fn through_a_snapshot(state: &crate::domain::EventState) -> crate::domain::EventState {
        let snapshot = PartitionSnapshot {
            version: format::PARTITION_SNAPSHOT_VERSION,
            last: Some(0),
            next: 1,
            events: vec![state.snapshot()],
        };
        let bytes = snapshot.encode().unwrap();
        let [event] = <[_; 1]>::try_from(PartitionSnapshot::decode(&bytes).unwrap().events).unwrap();
        crate::domain::EventState::from_snapshot(event)
    }
}

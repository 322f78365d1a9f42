//! Caps on the server-sent event streams one node holds, and their idle timeout.
//!
//! Each stream takes a [`StreamSlot`] for as long as it is open: one of the node's
//! `sse_per_node`, and one of its owner's, a customer's `sse_per_customer` (status streams) or
//! a client address's `sse_per_address` (the anonymous seat streams). A stream beyond a cap is
//! refused with `429 too-many-streams` and `Retry-After` before it reads anything. A stream that
//! has sent no event for `sse_idle_secs` ends (heartbeats do not count); `EventSource`
//! reconnects by itself with `Last-Event-ID`, so an idle client loses nothing but its slot.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontrow_http::Problem;
use frontrow_http::limits::{Limits, too_many};
use frontrow_schema::CustomerId;
use futures::{Stream, StreamExt};

/// Seconds a refused stream is asked to wait before it tries again.
const RETRY_AFTER_SECS: u32 = 5;

/// Who a stream counts against, beside the node.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StreamOwner {
    Customer(CustomerId),
    /// An address as [`frontrow_http::limits::ClientAddr::key`] gives it.
    Address(IpAddr),
}

/// The node's stream counts.
#[derive(Debug)]
pub struct StreamSlots {
    per_node: usize,
    per_customer: usize,
    per_address: usize,
    idle: Duration,
    open: AtomicUsize,
    owners: Mutex<HashMap<StreamOwner, usize>>,
}

impl StreamSlots {
    pub fn new(limits: &Limits) -> Arc<Self> {
        Arc::new(Self {
            per_node: limits.sse_per_node,
            per_customer: limits.sse_per_customer,
            per_address: limits.sse_per_address,
            idle: match limits.sse_idle_secs {
                0 => Duration::MAX,
                secs => Duration::from_secs(secs),
            },
            open: AtomicUsize::new(0),
            owners: Mutex::new(HashMap::new()),
        })
    }

    /// Streams open on this node now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// A slot for one more stream of `owner` (`None`: the node's cap alone), or the `429`.
    pub fn acquire(self: &Arc<Self>, owner: Option<StreamOwner>) -> Result<StreamSlot, Problem> {
        let open = self.open.fetch_add(1, Ordering::AcqRel);
        // From here the slot's Drop gives the node's count back, also on refusal.
        let mut slot = StreamSlot {
            slots: self.clone(),
            owner: None,
        };
        if self.per_node > 0 && open >= self.per_node {
            return Err(too_many(
                "node",
                format!("this node holds its {} streams; retry shortly", self.per_node),
                RETRY_AFTER_SECS,
            ));
        }
        let Some(owner) = owner else { return Ok(slot) };
        let (cap, limit) = match owner {
            StreamOwner::Customer(_) => (self.per_customer, "customer"),
            StreamOwner::Address(_) => (self.per_address, "address"),
        };
        if cap == 0 {
            return Ok(slot);
        }
        let mut owners = self.owners.lock().expect("stream owners lock");
        let held = owners.entry(owner.clone()).or_default();
        if *held >= cap {
            return Err(too_many(
                limit,
                format!("this {limit} already holds {cap} streams; close one first"),
                RETRY_AFTER_SECS,
            ));
        }
        *held += 1;
        slot.owner = Some(owner);
        Ok(slot)
    }

    /// Ends `stream` once it has been idle for the configured time, holding `slot` while it runs.
    pub fn idle_ends<S>(&self, stream: S, slot: StreamSlot) -> impl Stream<Item = S::Item> + Send + 'static
    where
        S: Stream + Send + 'static,
        S::Item: Send,
    {
        let idle = self.idle;
        futures::stream::unfold((Box::pin(stream), slot), move |(mut stream, slot)| async move {
            match tokio::time::timeout(idle, stream.next()).await {
                Ok(Some(item)) => Some((item, (stream, slot))),
                // Ended, or idle too long: dropping the state gives the slot back.
                Ok(None) | Err(_) => None,
            }
        })
    }
}

/// One open stream's place; given back when dropped (the stream ended or the client left).
#[derive(Debug)]
pub struct StreamSlot {
    slots: Arc<StreamSlots>,
    owner: Option<StreamOwner>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.slots.open.fetch_sub(1, Ordering::AcqRel);
        if let Some(owner) = self.owner.take() {
            let mut owners = self.slots.owners.lock().expect("stream owners lock");
            if let Some(held) = owners.get_mut(&owner) {
                *held -= 1;
                if *held == 0 {
                    owners.remove(&owner);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(per_node: usize, per_customer: usize) -> Arc<StreamSlots> {
        StreamSlots::new(&Limits {
            sse_per_node: per_node,
            sse_per_customer: per_customer,
            sse_per_address: 1,
            ..Limits::default()
        })
    }

    fn alice() -> Option<StreamOwner> {
        Some(StreamOwner::Customer(CustomerId::parse("alice").unwrap()))
    }

    #[test]
    fn caps_per_owner_and_per_node_and_slots_come_back() {
        let s = slots(3, 2);
        let a1 = s.acquire(alice()).unwrap();
        let _a2 = s.acquire(alice()).unwrap();
        let refused = s.acquire(alice()).unwrap_err();
        assert_eq!(refused.status.as_u16(), 429);
        assert_eq!(refused.retry_after, Some(RETRY_AFTER_SECS));
        assert_eq!(s.open(), 2, "a refusal holds nothing");
        let _anon = s.acquire(None).unwrap();
        // The node is full now, whoever asks.
        assert!(
            s.acquire(Some(StreamOwner::Address("192.0.2.1".parse().unwrap())))
                .is_err()
        );
        drop(a1);
        assert_eq!(s.open(), 2);
        let _a3 = s.acquire(alice()).unwrap();
        assert_eq!(s.owners.lock().unwrap().len(), 1);
    }

    #[test]
    fn zero_is_no_cap() {
        let s = slots(0, 0);
        let held: Vec<_> = (0..100).map(|_| s.acquire(alice()).unwrap()).collect();
        assert_eq!(s.open(), 100);
        drop(held);
        assert_eq!(s.open(), 0);
        assert!(s.owners.lock().unwrap().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_stream_ends_and_gives_its_slot_back() {
        let s = StreamSlots::new(&Limits {
            sse_idle_secs: 60,
            ..Limits::default()
        });
        let slot = s.acquire(alice()).unwrap();
        // One item, then silence.
        let stream = futures::stream::once(async { 1 }).chain(futures::stream::pending());
        let mut stream = Box::pin(s.idle_ends(stream, slot));
        assert_eq!(stream.next().await, Some(1));
        assert_eq!(s.open(), 1);
        assert_eq!(stream.next().await, None, "ended after 60 s without an item");
        drop(stream);
        assert_eq!(s.open(), 0);
    }
}

//! The node's places for request-time log replays: past maps (`?at=`), seat-stream resumes
//! (`Last-Event-ID`) and organizers' seat histories each read the log for one request, maybe
//! millions of records, and the live reads and the journal's followers must not wait behind
//! them. A replay runs only with a place; without one it is refused at once (`503` with
//! `Retry-After`), never queued.
//!
//! Anyone may ask for a past map or resume a stream, so those share [`MAX_PUBLIC_REPLAYS`]
//! places; organizers' seat histories have [`MAX_ORGANIZER_REPLAYS`] of their own (and take a
//! public one when theirs are busy), so anonymous traffic cannot lock organizers out.

use frontrow_http::Problem;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Places for anonymous replays (past maps, stream resumes).
pub const MAX_PUBLIC_REPLAYS: usize = 2;
/// Places kept for organizers' seat-history reads.
pub const MAX_ORGANIZER_REPLAYS: usize = 1;

/// Who a replay is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replayer {
    /// Anyone: a past map or a stream resume.
    Public,
    /// An authenticated organizer reading their event's seat history.
    Organizer,
}

/// Two pools of places, one per kind of caller.
#[derive(Debug)]
pub struct ReplayPlaces {
    public: Semaphore,
    organizers: Semaphore,
}

impl ReplayPlaces {
    pub const fn new(public: usize, organizers: usize) -> Self {
        Self {
            public: Semaphore::const_new(public),
            organizers: Semaphore::const_new(organizers),
        }
    }

    /// A place for `who`, held until dropped, or `None` when none is free.
    pub fn try_place(&self, who: Replayer) -> Option<SemaphorePermit<'_>> {
        match who {
            Replayer::Public => self.public.try_acquire().ok(),
            Replayer::Organizer => self
                .organizers
                .try_acquire()
                .or_else(|_| self.public.try_acquire())
                .ok(),
        }
    }
}

/// This process's places.
pub static REPLAYS: ReplayPlaces = ReplayPlaces::new(MAX_PUBLIC_REPLAYS, MAX_ORGANIZER_REPLAYS);

/// A place among this process's request-time replays for `who`, or `None` when all are taken.
pub fn replay_permit(who: Replayer) -> Option<SemaphorePermit<'static>> {
    REPLAYS.try_place(who)
}

/// [`replay_permit`] for a request that cannot run without one: no place is `503 overloaded`.
pub fn replay_permit_or_overloaded(who: Replayer) -> Result<SemaphorePermit<'static>, Problem> {
    replay_permit(who)
        .ok_or_else(|| Problem::overloaded("this node is already replaying the log for other requests; retry shortly"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_replays_cannot_take_the_organizers_places() {
        let places = ReplayPlaces::new(2, 1);
        let public: Vec<_> = (0..2).map(|_| places.try_place(Replayer::Public).unwrap()).collect();
        assert!(places.try_place(Replayer::Public).is_none(), "public places are full");
        let organizer = places.try_place(Replayer::Organizer);
        assert!(organizer.is_some(), "an organizer still gets a place");
        assert!(places.try_place(Replayer::Organizer).is_none(), "all places taken");
        drop(public);
        // With public places free, a second organizer read borrows one.
        assert!(places.try_place(Replayer::Organizer).is_some());
    }
}

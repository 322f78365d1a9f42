//! Seat attributes in best-available: an accessible block, a block on an aisle, and wheelchair
//! spaces kept for the fans who ask for them.
//!
//! `accessible: true` asks for `count` adjacent free seats (at least 2) that hold a wheelchair
//! space and a companion seat directly next to it: count 2 is one wheelchair space and its
//! companion seat, count 4 is those two and the two seats beside them. `aisle: true` prefers a
//! block that holds an aisle seat, and takes any block when no such one is left. An order that
//! does not ask for an accessible block gets wheelchair spaces and companion seats only when no
//! other block of its size is left in the section. Both preferences give way to the no-orphan
//! rule: a block that leaves a seat alone is taken only when every block the order may take
//! does. The blocks are ranked with the no-orphan rule's ranking (see [`super::orphans`]); this
//! module says which seats of a row carry which attribute.

use frontrow_schema::seatmap::SeatAttributes;
use frontrow_schema::*;

use super::decide::Rejection;
use super::orphans;
use super::state::EventState;

/// What a best-available order asks of its seats beyond adjacency.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeatNeeds {
    /// A wheelchair space with a companion seat next to it.
    pub accessible: bool,
    /// Preferably a block touching an aisle seat.
    pub aisle: bool,
}

/// The fewest seats an accessible order takes: a wheelchair space and its companion seat.
pub const MIN_ACCESSIBLE_SEATS: u8 = 2;

/// The best `count` adjacent free seats of `section` that meet `needs` (plain best-available
/// when `needs` is the default).
pub(super) fn best_with(
    state: &EventState,
    section: &SectionCode,
    count: u8,
    needs: SeatNeeds,
) -> Result<Vec<u32>, Rejection> {
    let Some(si) = state.layout.section_index(section) else {
        return Err(Rejection::UnknownSection(section.clone()));
    };
    if needs.accessible && count < MIN_ACCESSIBLE_SEATS {
        return Err(Rejection::AccessibleTooFew { asked: count });
    }
    let rows = state.layout.section_rows(si);
    let no_orphans = !state.info.allow_orphan_seats;
    orphans::best_block(state, rows, u32::from(count), no_orphans, needs).ok_or_else(|| {
        if needs.accessible {
            Rejection::NoAccessibleSeats {
                section: section.clone(),
                count,
            }
        } else {
            Rejection::NoAdjacentSeats {
                section: section.clone(),
                count,
            }
        }
    })
}

/// Which seats of one row are wheelchair spaces or companion seats, start an accessible pair,
/// or are on an aisle, as prefix sums so that any block is asked in constant time. A row without
/// attributes (most rows) allocates nothing.
pub(super) struct RowMarks {
    /// `accessible[i]`: wheelchair spaces and companion seats among the row's first `i` seats.
    accessible: Vec<u32>,
    /// `pairs[i]`: pairs (a wheelchair space next to its companion seat) starting among the
    /// first `i` seats.
    pairs: Vec<u32>,
    /// `aisles[i]`: aisle seats among the first `i` seats.
    aisles: Vec<u32>,
}

impl RowMarks {
    pub(super) fn new(attributes: &SeatAttributes, seats: u32) -> Self {
        let n = seats as usize;
        let flags = |list: &[u16]| {
            let mut flags = vec![false; if list.is_empty() { 0 } else { n }];
            // Validated maps number seats 1..=seats; anything else is ignored.
            for &number in list.iter().filter(|&&s| s >= 1 && u32::from(s) <= seats) {
                flags[usize::from(number) - 1] = true;
            }
            flags
        };
        let (wheelchair, companion, aisle) = (
            flags(&attributes.wheelchair),
            flags(&attributes.companion),
            flags(&attributes.aisle),
        );
        let at = |f: &[bool], i: usize| f.get(i).copied().unwrap_or(false);
        let prefix = |empty: bool, f: &dyn Fn(usize) -> bool| {
            if empty {
                return Vec::new();
            }
            let mut sums = vec![0u32; n + 1];
            for i in 0..n {
                sums[i + 1] = sums[i] + u32::from(f(i));
            }
            sums
        };
        let no_accessible = wheelchair.is_empty() && companion.is_empty();
        let no_pairs = wheelchair.is_empty() || companion.is_empty();
        Self {
            accessible: prefix(no_accessible, &|i| at(&wheelchair, i) || at(&companion, i)),
            pairs: prefix(no_pairs, &|i| {
                (at(&wheelchair, i) && at(&companion, i + 1)) || (at(&companion, i) && at(&wheelchair, i + 1))
            }),
            aisles: prefix(aisle.is_empty(), &|i| at(&aisle, i)),
        }
    }

    /// Whether the row has any accessible pair at all.
    pub(super) fn has_pairs(&self) -> bool {
        self.pairs.last().is_some_and(|&n| n > 0)
    }

    /// Whether seats `first..=last` (offsets in the row) hold a wheelchair space or a companion
    /// seat.
    pub(super) fn accessible_in(&self, first: u32, last: u32) -> bool {
        count_in(&self.accessible, first, last + 1)
    }

    /// Whether seats `first..=last` hold a wheelchair space next to its companion seat.
    pub(super) fn pair_in(&self, first: u32, last: u32) -> bool {
        // A pair starting at the block's last seat reaches outside it.
        count_in(&self.pairs, first, last)
    }

    pub(super) fn aisle_in(&self, first: u32, last: u32) -> bool {
        count_in(&self.aisles, first, last + 1)
    }
}

/// Whether the prefix sums count anything in `from..to` (an empty list counts nothing).
fn count_in(sums: &[u32], from: u32, to: u32) -> bool {
    !sums.is_empty() && sums[to as usize] > sums[from as usize]
}

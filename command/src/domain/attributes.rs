//! Best-available that asks for seat attributes: an accessible block, a block on an aisle.
//!
//! `accessible: true` asks for `count` adjacent free seats (at least 2) that hold a wheelchair
//! space and a companion seat directly next to it: count 2 is one wheelchair space and its
//! companion seat, count 4 is those two and the two seats beside them. `aisle: true` prefers a
//! block that holds an aisle seat, and takes any block when no such one is left. Rows are tried
//! front to back and, within a row, the block closest to the row's centre wins, as for plain
//! best-available. The work is one pass over each row of the section, whatever is asked.

use frontrow_schema::seatmap::{RowSpan, SeatAttributes};
use frontrow_schema::*;

use super::decide::Rejection;
use super::state::{EventState, SeatState};

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

/// The best `count` adjacent free seats of `section` that meet `needs`.
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
    let find = |aisle: bool| {
        rows.iter().find_map(|span| {
            let attributes = state.layout.map().attributes_of(span);
            best_in_row(state, span, attributes, u32::from(count), needs.accessible, aisle)
        })
    };
    let found = if needs.aisle {
        find(true).or_else(|| find(false))
    } else {
        find(false)
    };
    found.ok_or_else(|| {
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

/// The free block of `count` seats of one row closest to its centre that holds a wheelchair
/// space next to a companion seat (if `accessible`) and an aisle seat (if `aisle`).
fn best_in_row(
    state: &EventState,
    span: &RowSpan,
    attributes: &SeatAttributes,
    count: u32,
    accessible: bool,
    aisle: bool,
) -> Option<Vec<u32>> {
    let seats = u32::from(span.seats);
    if seats < count || (accessible && attributes.wheelchair.is_empty()) || (aisle && attributes.aisle.is_empty()) {
        return None;
    }
    let n = seats as usize;
    // pairs[i]: seats i and i+1 (0-based) are a wheelchair space and a companion seat.
    let mut is_wheelchair = vec![false; n];
    let mut is_companion = vec![false; n];
    let mut is_aisle = vec![false; n];
    for (flags, list) in [
        (&mut is_wheelchair, &attributes.wheelchair),
        (&mut is_companion, &attributes.companion),
        (&mut is_aisle, &attributes.aisle),
    ] {
        // Validated maps number seats 1..=seats; anything else is ignored.
        for &number in list.iter().filter(|&&s| s >= 1 && u32::from(s) <= seats) {
            flags[usize::from(number) - 1] = true;
        }
    }
    let pair = |i: usize| {
        i + 1 < n && ((is_wheelchair[i] && is_companion[i + 1]) || (is_companion[i] && is_wheelchair[i + 1]))
    };
    // Prefix sums, so each block is checked in constant time.
    let prefix = |f: &dyn Fn(usize) -> bool| {
        let mut sums = vec![0u32; n + 1];
        for i in 0..n {
            sums[i + 1] = sums[i] + u32::from(f(i));
        }
        sums
    };
    let pairs = prefix(&pair);
    let aisles = prefix(&|i| is_aisle[i]);
    let centre_distance = |start: u32| (2 * start + count).abs_diff(seats);
    let mut best: Option<u32> = None;
    let mut run = 0u32;
    for offset in 0..seats {
        if state.seats[(span.start + offset) as usize] == SeatState::Available {
            run += 1;
        } else {
            run = 0;
        }
        if run < count {
            continue;
        }
        let start = offset + 1 - count;
        let (first, last) = (start as usize, offset as usize);
        // A pair starting at the block's last seat reaches outside it.
        let has_pair = pairs[last] > pairs[first];
        let has_aisle = aisles[last + 1] > aisles[first];
        if (!accessible || has_pair)
            && (!aisle || has_aisle)
            && best.is_none_or(|b| centre_distance(start) < centre_distance(b))
        {
            best = Some(start);
        }
    }
    best.map(|start| (span.start + start..span.start + start + count).collect())
}

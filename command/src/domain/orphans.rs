//! The no-orphan-seat rule, and which order sizes an event can still sell.
//!
//! A seat is *taken* when it is not [`SeatState::Available`] (held, booked, or anything else a
//! rule keeps from sale). A free seat is *stranded* (an orphan) when it is alone in its row:
//! taken seats, or a taken seat and the row's end, on both sides. Only a fan buying a single
//! can use it, so a venue whose fans buy pairs loses it. While an event's rule is on (the
//! default; the organizer's `allow_orphan_seats` turns it off):
//!
//! - best-available ([`best_block`]) ranks every block of `count` free adjacent seats of the
//!   section by, in this order: (1) it strands no seat that was not alone already; then the
//!   seat attributes' two rankings (wheelchair spaces kept for accessible orders, an aisle seat
//!   for orders that ask for one; see [`super::attributes`]); (2) front row first, (3) the
//!   fewest free runs of odd length left in its row (an even run sells to its last seat in
//!   pairs, the commonest order), (4) closest to the row's centre, (5) the leftmost. A block
//!   that strands a seat is taken only when no block of the section avoids it, whatever its
//!   seats are;
//! - an explicit selection ([`stranded_by`]) that would leave a seat alone that was not is
//!   refused, unless no selection of as many seats from the same row would avoid it. Seats
//!   picked side by side are compared with the other blocks of that size in the row (a group
//!   sitting together is never pushed apart); scattered seats with any seats of the row.
//!
//! With the rule off, best-available is the attributes' rankings, (2), (4) and (5), and explicit
//! seats are not checked.
//! [`sellable`] says which order sizes can still be sold; the waiting room admits fans and
//! declares the event sold out from it. Nothing here does I/O or keeps state of its own.

use std::collections::BTreeMap;

use frontrow_schema::seatmap::RowSpan;

use super::attributes::{RowMarks, SeatNeeds};
use super::state::{EventState, SeatState};

/// The order sizes an event can sell right now: always `1..=largest` (empty when `largest` is
/// 0), since a block of `k` free adjacent seats also holds every smaller block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderSizes {
    largest: u8,
}

impl OrderSizes {
    /// The largest order that can still be sold (0: none).
    pub fn largest(self) -> u8 {
        self.largest
    }

    pub fn contains(self, size: u8) -> bool {
        (1..=self.largest).contains(&size)
    }

    /// Nothing can be sold: no order of any size finds its seats.
    pub fn is_empty(self) -> bool {
        self.largest == 0
    }
}

/// Which order sizes (`1..=max_seats_per_order`) can still be sold from the event's free seats
/// right now: a size is sellable when some row has that many free adjacent seats. Every free
/// seat can be sold to a single, so only an event with no free seat at all sells nothing; the
/// no-orphan rule never makes a size unsellable (it only prefers, or refuses in favour of,
/// another block of the same size). Scans the rows until one holds a full order.
pub fn sellable(state: &EventState) -> OrderSizes {
    let most = u32::from(state.info.max_seats_per_order);
    let mut largest = 0;
    if state.counts.available > 0 {
        'scan: for section in 0..state.layout.section_count() {
            for row in state.layout.section_rows(section) {
                // A standing zone's places need no adjacency: it takes any order up to its free
                // places.
                let longest = if row.standing {
                    row_seats(state, row)
                        .iter()
                        .filter(|&&s| s == SeatState::Available)
                        .count() as u32
                } else {
                    free_runs(row_seats(state, row)).map(|(_, n)| n).max().unwrap_or(0)
                };
                largest = largest.max(longest.min(most));
                if largest == most {
                    break 'scan;
                }
            }
        }
    }
    OrderSizes { largest: largest as u8 }
}

/// How a candidate block leaves its row; the smallest rank is the best block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Rank {
    /// It leaves a free seat alone that was not (rule on only). First: no preference of a
    /// block's seats is worth a seat nobody can sell next to.
    strands: bool,
    /// An order that did not ask for an accessible block would take a wheelchair space or a
    /// companion seat.
    takes_accessible: bool,
    /// The order asked for an aisle and the block has no aisle seat.
    no_aisle: bool,
    /// The row's place in the section, front first.
    row: usize,
    /// Free runs of odd length in the row after the block (rule on only).
    odd_runs: u32,
    /// Twice the distance of the block's centre from the row's centre, in seats.
    centre: u32,
    /// The block's first seat within its row.
    start: u32,
}

impl Rank {
    /// Nothing in a row further back can beat a block of this rank.
    fn beats_the_rows_behind(self) -> bool {
        !self.takes_accessible && !self.no_aisle && !self.strands
    }
}

/// The best `count` free adjacent seats among `rows` (a section's rows, front to back) that meet
/// `needs`, ranked as the module says, with two rankings of [`super::attributes`] right after
/// the no-orphan rule's first: among the blocks that strand nothing (or, when none does, among
/// all), an order that did not ask for an accessible block avoids wheelchair spaces and
/// companion seats, and an order that asked for an aisle takes a block with an aisle seat. An
/// accessible order only takes blocks that hold a wheelchair space next to its companion seat.
/// `no_orphans` is the event's rule. `None` when no row has such a block.
pub(super) fn best_block(
    state: &EventState,
    rows: &[RowSpan],
    count: u32,
    no_orphans: bool,
    needs: SeatNeeds,
) -> Option<Vec<u32>> {
    let mut best: Option<(Rank, u32)> = None;
    for (ri, row) in rows.iter().enumerate() {
        if best.is_some_and(|(b, _)| b.beats_the_rows_behind()) {
            break;
        }
        let seats = row_seats(state, row);
        let len = seats.len() as u32;
        if len < count {
            continue;
        }
        let marks = RowMarks::new(state.layout.map().attributes_of(row), len);
        if needs.accessible && !marks.has_pairs() {
            continue;
        }
        let odd_before = free_runs(seats).filter(|&(_, n)| n % 2 == 1).count() as u32;
        for (run_start, n) in free_runs(seats) {
            if n < count {
                continue;
            }
            for left in 0..=n - count {
                let right = n - count - left;
                let start = run_start + left;
                let last = start + count - 1;
                if needs.accessible && !marks.pair_in(start, last) {
                    continue;
                }
                let rank = Rank {
                    takes_accessible: !needs.accessible && marks.accessible_in(start, last),
                    no_aisle: needs.aisle && !marks.aisle_in(start, last),
                    strands: no_orphans && (left == 1 || right == 1),
                    row: ri,
                    odd_runs: if no_orphans {
                        odd_before - n % 2 + left % 2 + right % 2
                    } else {
                        0
                    },
                    centre: (2 * start + count).abs_diff(len),
                    start,
                };
                if best.is_none_or(|(b, _)| rank < b) {
                    best = Some((rank, row.start + start));
                }
            }
        }
    }
    best.map(|(_, first)| (first..first + count).collect())
}

/// The seats an explicit selection (valid, free seat indexes) would strand against the rule:
/// in each row it touches, the free seats it leaves alone that were not alone before, unless
/// every other choice of as many seats in that row strands one too: every block of that size
/// when the row's part of the selection is one block, every set of that many free seats when
/// it is scattered. Empty: the rule accepts it.
pub(super) fn stranded_by(state: &EventState, selection: &[u32]) -> Vec<u32> {
    let mut rows: BTreeMap<u32, (RowSpan, Vec<usize>)> = BTreeMap::new();
    for &i in selection {
        let row = state.layout.row_of(i);
        rows.entry(row.start)
            .or_insert_with(|| (row, Vec::new()))
            .1
            .push((i - row.start) as usize);
    }
    let mut stranded = Vec::new();
    for (row, picked) in rows.values() {
        let seats = row_seats(state, row);
        let before: Vec<bool> = seats.iter().map(|s| *s == SeatState::Available).collect();
        let mut after = before.clone();
        for &o in picked {
            after[o] = false;
        }
        let alone_now: Vec<u32> = (0..after.len())
            .filter(|&o| alone(&after, o) && !alone(&before, o))
            .map(|o| row.start + o as u32)
            .collect();
        let together = picked
            .iter()
            .max()
            .zip(picked.iter().min())
            .is_some_and(|(hi, lo)| hi - lo + 1 == picked.len());
        let runs = free_runs(seats).map(|(_, n)| n);
        let avoidable = if together {
            clean_block(runs, picked.len() as u32)
        } else {
            avoidable(runs, picked.len())
        };
        if !alone_now.is_empty() && avoidable {
            stranded.extend(alone_now);
        }
    }
    stranded
}

/// Whether the free seat at `o` has no free neighbour in its row.
fn alone(free: &[bool], o: usize) -> bool {
    free[o] && (o == 0 || !free[o - 1]) && free.get(o + 1).is_none_or(|f| !f)
}

/// Whether a block of `count` adjacent seats can be taken from free runs of these lengths
/// without leaving a seat alone: a run of exactly `count`, or one with two seats to spare (a
/// block at its end); one seat to spare always leaves it alone.
fn clean_block(mut runs: impl Iterator<Item = u32>, count: u32) -> bool {
    runs.any(|n| n == count || n >= count + 2)
}

/// Whether `count` seats can be taken from free runs of these lengths without leaving a seat
/// alone that was not. From a run of `n` seats, taking all of them or at most `n - 2` from one
/// end leaves no seat alone; taking `n - 1` (however chosen) always leaves its last seat alone.
/// So this is a subset sum over the runs, for `count` up to an order's size.
fn avoidable(runs: impl Iterator<Item = u32>, count: usize) -> bool {
    if count >= 64 {
        return true;
    }
    let mask = u64::MAX >> (63 - count);
    let mut reach = 1u64;
    for n in runs {
        let mut next = reach;
        for j in 1..=n.min(count as u32) {
            if j + 1 != n {
                next |= reach << j;
            }
        }
        reach = next & mask;
    }
    reach >> count & 1 == 1
}

/// The seat states of one row.
fn row_seats<'a>(state: &'a EventState, row: &RowSpan) -> &'a [SeatState] {
    let start = row.start as usize;
    &state.seats[start..start + row.seats as usize]
}

/// The free runs of a row: `(offset of the first seat, length)`, left to right.
fn free_runs(seats: &[SeatState]) -> impl Iterator<Item = (u32, u32)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        while seats.get(at).is_some_and(|s| *s != SeatState::Available) {
            at += 1;
        }
        let start = at;
        while seats.get(at) == Some(&SeatState::Available) {
            at += 1;
        }
        (at > start).then(|| (start as u32, (at - start) as u32))
    })
}

//! The binary encoding of partition snapshots (version 2).
//!
//! A [`Compact`] value is written as a plain sequence of bytes with no field names: unsigned
//! integers as LEB128 varints, signed ones zigzagged first, strings and nested parts as a varint
//! length and their bytes, options as a `0`/`1` byte, lists as a varint count and their items,
//! maps as sorted `(key, value)` lists (so the same state always gives the same bytes), ids as
//! their 16 UUID bytes and instants as whole seconds and nanoseconds. A reader checks everything
//! it reads: a length or count is never trusted beyond the bytes left (every item takes at least
//! one byte), so a damaged snapshot is refused ([`Malformed`]) without allocating more than its
//! own size.
//!
//! A version-2 partition snapshot is [`MAGIC`], the version, `last: Option<u64>`, `next: u64`
//! and a count of events, each of them
//!
//! ```text
//! event id (16 bytes) | length | info (length + EventScheduled as JSON)
//!                              | reservations: count, each seats: Vec<u32> | status | length + the writer's part
//!                              | withheld: Vec<(label, Vec<u32>)>
//!                              | length + the writer's part of the event
//! ```
//!
//! The status is [`HELD`], [`BOOKED`] or [`RELEASED`] followed by a [`ReleaseReason`]. What is
//! behind a "length + the writer's part" belongs to the partition writer (the command crate);
//! the query side skips it, and the lengths let it skip every event but the one it wants. The
//! schedule stays JSON: it is once per event and is the contract every side already reads.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::hash::Hash;

use chrono::{DateTime, Utc};

use crate::{
    Currency, CustomerId, EventId, Money, OrganizerId, Payment, QueueOpened, RefundReason, ReleaseReason, ReservationId,
};

/// How a version-2 (or later) partition snapshot starts; a version-1 snapshot is JSON.
pub const MAGIC: &[u8; 6] = b"FRSNAP";

/// A reservation's status byte: holding its seats.
pub const HELD: u8 = 0;
/// A reservation's status byte: paid, its seats sold.
pub const BOOKED: u8 = 1;
/// A reservation's status byte: its seats went back; a [`ReleaseReason`] follows.
pub const RELEASED: u8 = 2;

/// Bytes that are not a snapshot this encoding wrote.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed binary snapshot: {0}")]
pub struct Malformed(pub String);

impl Malformed {
    fn new(what: impl Into<String>) -> Self {
        Self(what.into())
    }
}

/// What is left to read of a snapshot.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    rest: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    /// Everything left, as bytes.
    pub fn bytes_left(self) -> &'a [u8] {
        self.rest
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// Fails unless everything was read.
    pub fn finish(self, what: &str) -> Result<(), Malformed> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(Malformed(format!("{} bytes after {what}", self.rest.len())))
        }
    }

    pub fn byte(&mut self) -> Result<u8, Malformed> {
        let (&first, rest) = self.rest.split_first().ok_or_else(|| Malformed::new("ends early"))?;
        self.rest = rest;
        Ok(first)
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if n > self.rest.len() {
            return Err(Malformed(format!("{n} bytes announced, {} left", self.rest.len())));
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    pub fn varint(&mut self) -> Result<u64, Malformed> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(Malformed::new("varint beyond 64 bits"));
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Malformed::new("varint beyond 64 bits"))
    }

    /// A count of items that take at least one byte each: never more than the bytes left.
    pub fn count(&mut self) -> Result<usize, Malformed> {
        let n = self.varint()?;
        if n > self.rest.len() as u64 {
            return Err(Malformed(format!(
                "{n} items announced, {} bytes left",
                self.rest.len()
            )));
        }
        Ok(n as usize)
    }

    /// A length-prefixed part, as its own input.
    pub fn nested(&mut self) -> Result<Input<'a>, Malformed> {
        let n = self.count()?;
        Ok(Input::new(self.bytes(n)?))
    }

    pub fn take<T: Compact>(&mut self) -> Result<T, Malformed> {
        T::take(self)
    }
}

pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Writes what `part` writes, preceded by its length.
pub fn put_nested(out: &mut Vec<u8>, part: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    part(out);
    let mut prefix = Vec::with_capacity(10);
    put_varint(&mut prefix, (out.len() - start) as u64);
    out.splice(start..start, prefix);
}

/// A value with a binary snapshot encoding.
pub trait Compact: Sized {
    fn put(&self, out: &mut Vec<u8>);
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed>;
}

impl Compact for u64 {
    fn put(&self, out: &mut Vec<u8>) {
        put_varint(out, *self);
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        input.varint()
    }
}

impl Compact for u32 {
    fn put(&self, out: &mut Vec<u8>) {
        put_varint(out, u64::from(*self));
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        let n = input.varint()?;
        u32::try_from(n).map_err(|_| Malformed(format!("{n} is beyond 32 bits")))
    }
}

impl Compact for i64 {
    fn put(&self, out: &mut Vec<u8>) {
        put_varint(out, ((*self << 1) ^ (*self >> 63)) as u64);
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        let n = input.varint()?;
        Ok(((n >> 1) as i64) ^ -((n & 1) as i64))
    }
}

impl Compact for bool {
    fn put(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        match input.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(Malformed(format!("{b} is not a boolean"))),
        }
    }
}

impl Compact for String {
    fn put(&self, out: &mut Vec<u8>) {
        put_str(out, self);
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        Ok(take_str(input)?.to_owned())
    }
}

/// A string as [`String`] writes it, borrowed from the input.
pub fn take_str<'a>(input: &mut Input<'a>) -> Result<&'a str, Malformed> {
    let n = input.count()?;
    std::str::from_utf8(input.bytes(n)?).map_err(|e| Malformed(format!("text that is not UTF-8: {e}")))
}

/// Writes `text` the way [`String`] does.
pub fn put_str(out: &mut Vec<u8>, text: &str) {
    put_varint(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

impl<T: Compact> Compact for Option<T> {
    fn put(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(0),
            Some(value) => {
                out.push(1);
                value.put(out);
            }
        }
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        match input.byte()? {
            0 => Ok(None),
            1 => Ok(Some(T::take(input)?)),
            b => Err(Malformed(format!("{b} is not an option's tag"))),
        }
    }
}

/// Writes a list: its length, then each item.
pub fn put_list<'a, T: Compact + 'a>(out: &mut Vec<u8>, items: impl ExactSizeIterator<Item = &'a T>) {
    put_varint(out, items.len() as u64);
    for item in items {
        item.put(out);
    }
}

/// Reads a list [`put_list`] wrote into any collection.
pub fn take_list<T: Compact, C: FromIterator<T>>(input: &mut Input<'_>) -> Result<C, Malformed> {
    let n = input.count()?;
    (0..n).map(|_| T::take(input)).collect()
}

impl<T: Compact> Compact for Vec<T> {
    fn put(&self, out: &mut Vec<u8>) {
        put_list(out, self.iter());
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        take_list(input)
    }
}

impl<T: Compact> Compact for VecDeque<T> {
    fn put(&self, out: &mut Vec<u8>) {
        put_list(out, self.iter());
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        take_list(input)
    }
}

impl<T: Compact + Ord> Compact for BTreeSet<T> {
    fn put(&self, out: &mut Vec<u8>) {
        put_list(out, self.iter());
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        take_list(input)
    }
}

impl<A: Compact, B: Compact> Compact for (A, B) {
    fn put(&self, out: &mut Vec<u8>) {
        self.0.put(out);
        self.1.put(out);
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        Ok((A::take(input)?, B::take(input)?))
    }
}

/// Writes map entries as a list sorted by key.
fn put_entries<'a, K: Compact + Ord + 'a, V: Compact + 'a>(
    out: &mut Vec<u8>,
    entries: impl ExactSizeIterator<Item = (&'a K, &'a V)>,
) {
    let mut sorted: Vec<(&K, &V)> = entries.collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
    put_varint(out, sorted.len() as u64);
    for (key, value) in sorted {
        key.put(out);
        value.put(out);
    }
}

impl<K: Compact + Ord, V: Compact> Compact for BTreeMap<K, V> {
    fn put(&self, out: &mut Vec<u8>) {
        put_entries(out, self.iter());
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        take_list(input)
    }
}

impl<K: Compact + Ord + Hash, V: Compact> Compact for HashMap<K, V> {
    fn put(&self, out: &mut Vec<u8>) {
        put_entries(out, self.iter());
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        take_list(input)
    }
}

impl Compact for DateTime<Utc> {
    fn put(&self, out: &mut Vec<u8>) {
        self.timestamp().put(out);
        self.timestamp_subsec_nanos().put(out);
    }
    fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
        let (secs, nanos) = (i64::take(input)?, u32::take(input)?);
        DateTime::from_timestamp(secs, nanos).ok_or_else(|| Malformed(format!("no instant at {secs} s {nanos} ns")))
    }
}

/// Writes a struct as its fields in the order listed, and reads them back in that order. A field
/// added to the struct and not to the list fails to compile (the read names every field).
#[macro_export]
macro_rules! compact_struct {
    ($name:path { $($field:ident),* $(,)? }) => {
        impl $crate::snapshot::binary::Compact for $name {
            fn put(&self, out: &mut Vec<u8>) {
                $($crate::snapshot::binary::Compact::put(&self.$field, out);)*
            }
            fn take(
                input: &mut $crate::snapshot::binary::Input<'_>,
            ) -> Result<Self, $crate::snapshot::binary::Malformed> {
                Ok(Self {
                    $($field: input.take()?,)*
                })
            }
        }
    };
}

macro_rules! compact_uuid {
    ($($name:ident),*) => {$(
        impl Compact for $name {
            fn put(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(self.as_uuid().as_bytes());
            }
            fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
                let bytes: [u8; 16] = input.bytes(16)?.try_into().map_err(|_| Malformed::new("short id"))?;
                Ok(Self::from_uuid(uuid::Uuid::from_bytes(bytes)))
            }
        }
    )*};
}
compact_uuid!(EventId, ReservationId);

macro_rules! compact_text {
    ($($name:ident),*) => {$(
        impl Compact for $name {
            fn put(&self, out: &mut Vec<u8>) {
                put_str(out, self.as_str());
            }
            fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
                let text = take_str(input)?;
                Self::parse(text).map_err(|e| Malformed(format!("{}: {}", e.kind, e.reason)))
            }
        }
    )*};
}
compact_text!(CustomerId, OrganizerId, Currency);

compact_struct!(Money { amount, currency });

compact_struct!(Payment {
    provider_event_id,
    payment_intent,
    amount
});

compact_struct!(QueueOpened {
    max_size,
    max_shoppers,
    admission_secs
});

/// A fieldless enum written as its position in `ALL`.
macro_rules! compact_enum {
    ($name:ident: $($variant:ident),*) => {
        impl Compact for $name {
            fn put(&self, out: &mut Vec<u8>) {
                const ALL: &[$name] = &[$($name::$variant),*];
                out.push(ALL.iter().position(|v| v == self).unwrap_or_default() as u8);
            }
            fn take(input: &mut Input<'_>) -> Result<Self, Malformed> {
                const ALL: &[$name] = &[$($name::$variant),*];
                let b = input.byte()?;
                ALL.get(usize::from(b))
                    .copied()
                    .ok_or_else(|| Malformed(format!("{b} is not a {}", stringify!($name))))
            }
        }
    };
}
compact_enum!(ReleaseReason: Expired, Released, PaymentFailed, Refunded);
compact_enum!(RefundReason: SeatsTaken, DuplicatePayment, AmountMismatch, BookingCancelled, CustomerLimit);

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn round_trip<T: Compact + PartialEq + std::fmt::Debug>(value: T) -> Vec<u8> {
        let mut out = Vec::new();
        value.put(&mut out);
        let mut input = Input::new(&out);
        assert_eq!(input.take::<T>().unwrap(), value);
        input.finish("the value").unwrap();
        out
    }

    #[test]
    fn integers_are_varints_and_signed_ones_zigzag() {
        assert_eq!(round_trip(0u64), [0]);
        assert_eq!(round_trip(127u64), [127]);
        assert_eq!(round_trip(300u64), [0xac, 0x02]);
        assert_eq!(round_trip(u64::MAX).len(), 10);
        assert_eq!(round_trip(-1i64), [1]);
        assert_eq!(round_trip(1i64), [2]);
        round_trip(i64::MIN);
        round_trip(i64::MAX);
        round_trip(u32::MAX);
        let mut big = Vec::new();
        put_varint(&mut big, u64::from(u32::MAX) + 1);
        assert!(Input::new(&big).take::<u32>().is_err());
        // An eleventh byte, or a tenth beyond bit 64, is refused.
        assert!(Input::new(&[0xff; 11]).varint().is_err());
        assert!(
            Input::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])
                .varint()
                .is_err()
        );
    }

    #[test]
    fn texts_lists_options_and_maps_round_trip_and_maps_sort() {
        assert_eq!(round_trip("évé".to_owned()), [5, 0xc3, 0xa9, b'v', 0xc3, 0xa9]);
        round_trip(vec![Some(3u64), None]);
        round_trip(VecDeque::from([1u64, 2]));
        round_trip(BTreeSet::from([(
            Utc.with_ymd_and_hms(2030, 1, 2, 3, 4, 5).unwrap(),
            7u64,
        )]));
        let map: HashMap<u64, String> = (0..50).map(|i| (i * 7919 % 101, i.to_string())).collect();
        let bytes = round_trip(map.clone());
        let mut entries: Vec<(u64, String)> = map.into_iter().collect();
        entries.sort_by(|a, b| b.cmp(a));
        let again: HashMap<u64, String> = entries.into_iter().collect();
        let mut out = Vec::new();
        again.put(&mut out);
        assert_eq!(out, bytes, "the same map gives the same bytes whatever its order");
    }

    #[test]
    fn instants_ids_and_money_round_trip() {
        round_trip(Utc.timestamp_opt(-86_400, 999_999_999).unwrap());
        round_trip(DateTime::<Utc>::MAX_UTC);
        round_trip(ReservationId::new());
        round_trip(CustomerId::parse("fan.1@x").unwrap());
        round_trip(Money {
            amount: -5,
            currency: Currency::parse("EUR").unwrap(),
        });
        round_trip(RefundReason::CustomerLimit);
        assert_eq!(round_trip(ReleaseReason::Refunded), [3]);
    }

    #[test]
    fn damaged_bytes_are_refused_without_reading_past_their_end() {
        // A count that the bytes left cannot hold: refused before anything is allocated.
        assert!(
            Input::new(&[0xff, 0xff, 0xff, 0xff, 0x0f, 1])
                .take::<Vec<u64>>()
                .is_err()
        );
        assert!(Input::new(&[3, b'a']).take::<String>().is_err());
        assert!(Input::new(&[2, 0xff, 0xfe]).take::<String>().is_err());
        assert!(Input::new(&[2]).take::<bool>().is_err());
        assert!(Input::new(&[7]).take::<Option<u64>>().is_err());
        assert!(Input::new(&[9]).take::<ReleaseReason>().is_err());
        assert!(Input::new(&[4, b'f', b'a', b'n', b' ']).take::<CustomerId>().is_err());
        assert!(Input::new(&[1, 2, 3]).take::<ReservationId>().is_err());
        assert!(Input::new(&[1, 2]).finish("one byte").is_err());
        let mut nested = Vec::new();
        put_nested(&mut nested, |out| out.extend_from_slice(&[0xaa; 200]));
        assert_eq!(&nested[..2], &[0xc8, 0x01]);
        let mut input = Input::new(&nested);
        assert_eq!(input.nested().unwrap().bytes(200).unwrap(), &[0xaa; 200][..]);
        assert!(input.is_empty());
        assert!(Input::new(&nested[..100]).nested().is_err());
    }
}

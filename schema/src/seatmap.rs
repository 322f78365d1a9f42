//! A venue's seat map and the values attached to it: sections, rows, seats, price tiers, money.
//!
//! A seat map is sections of rows; a row has `seats` seats numbered `1..=seats`, all in one
//! price tier. A seat is named `SECTION-ROW-NUMBER` (`101-C-7`). The map has a derived flat
//! index ([`SeatLayout`]): seat `i` is the `i`-th seat walking sections, rows and numbers in
//! order. The write side and the query side both keep seat states in a `Vec` by that index.
//!
//! A section may instead be a standing zone (general admission): `standing: {capacity, tier}`
//! and no rows. Its places are laid out in the same flat index, as one span flagged
//! [`RowSpan::standing`], and named `SECTION-GA-N` (`FLOOR-GA-17`, `N` in `1..=capacity`), so
//! the hold, booking and release of a place are those of a seat.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ids::InvalidId;

/// The most seats one row may have.
pub const MAX_SEATS_PER_ROW: u16 = 500;
/// The most seats one event may have.
pub const MAX_SEATS_PER_EVENT: u32 = 200_000;
/// The highest price of a seat, in minor units (1,000,000.00 in a currency with cents). With at
/// most [`MAX_SEATS_PER_EVENT`] seats, a sold-out event's takings stay far inside `i64`.
pub const MAX_PRICE: i64 = 100_000_000;
/// The longest name of a section or a price tier.
pub const MAX_NAME: usize = 100;
/// The most places one standing zone may have (a place number must fit a [`SeatId`]'s `u16`).
pub const MAX_ZONE_CAPACITY: u32 = 50_000;
/// The row name of every place of a standing zone: `FLOOR-GA-17` is place 17 of zone `FLOOR`.
pub const STANDING_ROW: &str = "GA";

/// An ASCII code of at most `N` bytes kept inline (zero-padded): a map keeps a code for every
/// section, row and tier, and a [`SeatId`] two of them, with no allocation for any. Ordered like
/// the text (no code contains a zero byte).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Inline<const N: usize> {
    bytes: [u8; N],
    len: u8,
}

impl<const N: usize> Inline<N> {
    /// `s`, checked by the caller to be ASCII of at most `N` bytes.
    fn new(s: &str) -> Self {
        let mut bytes = [0; N];
        bytes[..s.len()].copy_from_slice(s.as_bytes());
        Self {
            bytes,
            len: s.len() as u8,
        }
    }

    /// `s` as a code in a constant (`s` ASCII of at most `N` bytes: a longer one fails to build).
    const fn constant(s: &str) -> Self {
        let text = s.as_bytes();
        assert!(text.len() <= N, "a code longer than its kind allows");
        let mut bytes = [0; N];
        let mut i = 0;
        while i < text.len() {
            bytes[i] = text[i];
            i += 1;
        }
        Self {
            bytes,
            len: text.len() as u8,
        }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).expect("codes are ASCII")
    }
}

macro_rules! code {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $max:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, ToSchema)]
        #[schema(value_type = String)]
        pub struct $name(Inline<$max>);

        impl $name {
            pub fn parse(s: &str) -> Result<Self, InvalidId> {
                if s.is_empty() || s.len() > $max {
                    return Err(InvalidId {
                        kind: $kind,
                        reason: format!("{s:?} must be 1 to {} characters", $max),
                    });
                }
                if !s.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()) {
                    return Err(InvalidId {
                        kind: $kind,
                        reason: format!("{s:?} may contain only A-Z and 0-9"),
                    });
                }
                Ok(Self(Inline::new(s)))
            }

            pub fn as_str(&self) -> &str {
                self.0.as_str()
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.as_str()).finish()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_str(TextVisitor(Self::parse))
            }
        }
    };
}

/// Reads a code or a seat id from a string without copying the string first.
struct TextVisitor<T>(fn(&str) -> Result<T, InvalidId>);

impl<T> serde::de::Visitor<'_> for TextVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<T, E> {
        (self.0)(s).map_err(E::custom)
    }
}

code!(
    /// A section's short code, e.g. `FLA` or `101`.
    SectionCode,
    "section code",
    8
);
code!(
    /// A row's name within its section, e.g. `C` or `12`.
    RowName,
    "row name",
    4
);
code!(
    /// A price tier's code, e.g. `GOLD`.
    TierCode,
    "price tier code",
    16
);

/// One seat: `SECTION-ROW-NUMBER`, e.g. `101-C-7`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeatId {
    pub section: SectionCode,
    pub row: RowName,
    pub number: u16,
}

impl FromStr for SeatId {
    type Err = InvalidId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || InvalidId {
            kind: "seat id",
            reason: format!("{s:?} is not SECTION-ROW-NUMBER (e.g. 101-C-7)"),
        };
        let mut parts = s.split('-');
        let (Some(section), Some(row), Some(number), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid());
        };
        let number: u16 = number.parse().map_err(|_| invalid())?;
        if number == 0 {
            return Err(invalid());
        }
        Ok(Self {
            section: SectionCode::parse(section).map_err(|_| invalid())?,
            row: RowName::parse(row).map_err(|_| invalid())?,
            number,
        })
    }
}

impl fmt::Display for SeatId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.section, self.row, self.number)
    }
}

/// A seat id equals its text form, `SECTION-ROW-NUMBER` as [`Display`](fmt::Display) writes it
/// (so `A-1-07` is not `A-1-7`).
impl PartialEq<str> for SeatId {
    fn eq(&self, other: &str) -> bool {
        let mut parts = other.split('-');
        parts.next() == Some(self.section.as_str())
            && parts.next() == Some(self.row.as_str())
            && parts.next().is_some_and(|n| {
                n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0') && n.parse() == Ok(self.number)
            })
            && parts.next().is_none()
    }
}

impl PartialEq<&str> for SeatId {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl Serialize for SeatId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SeatId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(TextVisitor(str::parse))
    }
}

impl utoipa::PartialSchema for SeatId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some("SECTION-ROW-NUMBER"))
            .examples([serde_json::json!("101-C-7")])
            .into()
    }
}
impl utoipa::ToSchema for SeatId {}

/// An ISO 4217 currency code such as `EUR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ToSchema)]
#[schema(value_type = String, example = "EUR")]
pub struct Currency([u8; 3]);

impl Currency {
    pub fn parse(s: &str) -> Result<Self, InvalidId> {
        match s.as_bytes() {
            [a, b, c] if [a, b, c].iter().all(|x| x.is_ascii_uppercase()) => Ok(Self([*a, *b, *c])),
            _ => Err(InvalidId {
                kind: "currency",
                reason: format!("{s:?} is not a three-letter ISO 4217 code such as EUR"),
            }),
        }
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII uppercase letters are ever stored.
        std::str::from_utf8(&self.0).unwrap_or("XXX")
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Currency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Currency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// An amount in the currency's minor unit (cents).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Money {
    /// Minor units, e.g. cents.
    pub amount: i64,
    pub currency: Currency,
}

/// Whether free text as it will be stored is 1 to `max` characters and not blank. The limit is
/// on the value kept, never on a trimmed copy: padding counts.
pub fn text_fits(value: &str, max: usize) -> bool {
    !value.trim().is_empty() && value.chars().count() <= max
}

/// The sum of some amounts in minor units, or `None` where it would not fit an `i64`: money is
/// never summed with wrapping.
pub fn checked_sum(amounts: impl IntoIterator<Item = i64>) -> Option<i64> {
    amounts.into_iter().try_fold(0i64, i64::checked_add)
}

/// How long a hold lasts, in minutes: organizers pick 5 to 15.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = u8, example = 10)]
pub struct HoldMinutes(u8);

impl HoldMinutes {
    pub const MIN: u8 = 5;
    pub const MAX: u8 = 15;
    pub const DEFAULT: HoldMinutes = HoldMinutes(10);

    pub fn new(minutes: u8) -> Result<Self, InvalidId> {
        if (Self::MIN..=Self::MAX).contains(&minutes) {
            Ok(Self(minutes))
        } else {
            Err(InvalidId {
                kind: "hold duration",
                reason: format!("{minutes} minutes is outside 5..=15"),
            })
        }
    }

    pub fn minutes(self) -> u8 {
        self.0
    }

    pub fn duration(self) -> chrono::Duration {
        chrono::Duration::minutes(i64::from(self.0))
    }
}

impl Default for HoldMinutes {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl<'de> Deserialize<'de> for HoldMinutes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(u8::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A price tier: every seat in a row of this tier costs `price`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PriceTier {
    pub code: TierCode,
    pub name: String,
    /// Minor units of the event's currency.
    pub price: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Row {
    pub name: RowName,
    /// Seats are numbered `1..=seats`.
    pub seats: u16,
    pub tier: TierCode,
    /// Which of the row's seats are special (wheelchair spaces, ...). Absent when none are, so
    /// maps written before attributes existed keep their bytes and their meaning.
    #[serde(flatten)]
    #[schema(value_type = SeatAttributes)]
    pub attributes: RowAttributes,
}

/// A row's [`SeatAttributes`], kept on the heap only when the row has any: most rows have none,
/// and a map keeps a row for every twenty-odd seats in every copy of it (four empty lists
/// would be 96 bytes a row). Reads as the lists it holds (empty ones when it holds none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowAttributes(Option<Box<SeatAttributes>>);

static NO_ATTRIBUTES: SeatAttributes = SeatAttributes {
    wheelchair: Vec::new(),
    companion: Vec::new(),
    restricted_view: Vec::new(),
    aisle: Vec::new(),
};

impl From<SeatAttributes> for RowAttributes {
    fn from(attributes: SeatAttributes) -> Self {
        Self((!attributes.is_empty()).then(|| Box::new(attributes)))
    }
}

impl std::ops::Deref for RowAttributes {
    type Target = SeatAttributes;

    fn deref(&self) -> &SeatAttributes {
        self.0.as_deref().unwrap_or(&NO_ATTRIBUTES)
    }
}

impl Serialize for RowAttributes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for RowAttributes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        SeatAttributes::deserialize(d).map(Self::from)
    }
}

/// Seat numbers of one row that have an attribute, each list ascending or not, without repeats.
///
/// Every wheelchair space has a companion seat directly next to it (number one lower or one
/// higher, in the same row), and every companion seat is next to a wheelchair space: a
/// wheelchair user always has a seat for the person with them. A seat is not both.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SeatAttributes {
    /// Spaces for a wheelchair (no fixed seat).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(example = json!([1]))]
    pub wheelchair: Vec<u16>,
    /// Seats for the person accompanying a wheelchair user, next to a wheelchair space.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(example = json!([2]))]
    pub companion: Vec<u16>,
    /// Seats whose view of the stage is partly blocked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restricted_view: Vec<u16>,
    /// Seats on an aisle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(example = json!([1, 20]))]
    pub aisle: Vec<u16>,
}

impl SeatAttributes {
    pub fn is_empty(&self) -> bool {
        self.lists().iter().all(|(_, list)| list.is_empty())
    }

    /// Each list with its name in the map's JSON.
    pub fn lists(&self) -> [(&'static str, &[u16]); 4] {
        [
            ("wheelchair", &self.wheelchair),
            ("companion", &self.companion),
            ("restricted_view", &self.restricted_view),
            ("aisle", &self.aisle),
        ]
    }

    /// Checks the lists of a row of `seats` seats (see the type's rules).
    fn validate(&self, section: &SectionCode, row: &RowName, seats: u16) -> Result<(), SeatMapError> {
        let seat = |number| SeatId {
            section: section.clone(),
            row: row.clone(),
            number,
        };
        for (list, numbers) in self.lists() {
            let mut seen = HashSet::new();
            for &n in numbers {
                if n == 0 || n > seats {
                    return Err(SeatMapError::AttributeOutsideRow {
                        list,
                        section: section.clone(),
                        row: row.clone(),
                        number: n,
                        seats,
                    });
                }
                if !seen.insert(n) {
                    return Err(SeatMapError::AttributeRepeated { list, seat: seat(n) });
                }
            }
        }
        let next_to = |n: u16, list: &[u16]| list.iter().any(|&m| m.abs_diff(n) == 1);
        for &n in &self.wheelchair {
            if self.companion.contains(&n) {
                return Err(SeatMapError::WheelchairAndCompanion(seat(n)));
            }
            if !next_to(n, &self.companion) {
                return Err(SeatMapError::WheelchairWithoutCompanion(seat(n)));
            }
        }
        if let Some(&n) = self.companion.iter().find(|&&n| !next_to(n, &self.wheelchair)) {
            return Err(SeatMapError::CompanionWithoutWheelchair(seat(n)));
        }
        Ok(())
    }
}

/// A standing zone: `capacity` places without seat numbers, all in one price tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Standing {
    /// Places, 1 to [`MAX_ZONE_CAPACITY`].
    #[schema(example = 5000)]
    pub capacity: u32,
    pub tier: TierCode,
}

/// Either seated (`rows`) or a standing zone (`standing`), never both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Section {
    pub code: SectionCode,
    pub name: String,
    /// Front to back: best-available picks earlier rows first. Empty for a standing zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<Row>,
    /// A general-admission zone instead of rows. Absent for a seated section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standing: Option<Standing>,
}

impl Section {
    /// Seats in its rows, or places of its zone.
    pub fn places(&self) -> u64 {
        match &self.standing {
            Some(zone) => u64::from(zone.capacity),
            None => self.rows.iter().map(|r| u64::from(r.seats)).sum(),
        }
    }
}

/// The seats of one event and their price tiers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SeatMap {
    pub tiers: Vec<PriceTier>,
    pub sections: Vec<Section>,
}

/// Why a seat map is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeatMapError {
    #[error("the seat map has no sections")]
    NoSections,
    #[error("section {0} has no rows")]
    EmptySection(SectionCode),
    #[error("section {0} has both rows and a standing zone; a section is one or the other")]
    RowsAndStanding(SectionCode),
    #[error("standing zone {0} must have a capacity of 1 to {MAX_ZONE_CAPACITY} places")]
    BadCapacity(SectionCode),
    #[error("standing zone {0} uses price tier {1}, which is not defined")]
    UnknownZoneTier(SectionCode, TierCode),
    #[error("section {0} appears twice")]
    DuplicateSection(SectionCode),
    #[error("row {1} appears twice in section {0}")]
    DuplicateRow(SectionCode, RowName),
    #[error("row {1} in section {0} must have 1 to {MAX_SEATS_PER_ROW} seats")]
    BadRowSize(SectionCode, RowName),
    #[error("row {1} in section {0} uses price tier {2}, which is not defined")]
    UnknownTier(SectionCode, RowName, TierCode),
    #[error("price tier {0} appears twice")]
    DuplicateTier(TierCode),
    #[error("price tier {0} must have a price of 0 to {MAX_PRICE} (minor units)")]
    BadPrice(TierCode),
    #[error("the seat map has {0} seats, more than the {MAX_SEATS_PER_EVENT} allowed")]
    TooManySeats(u64),
    #[error("a name must be 1 to {MAX_NAME} characters, not blank")]
    BadName,
    #[error("row {row} in section {section} lists seat {number} as {list}, but its seats are 1 to {seats}")]
    AttributeOutsideRow {
        list: &'static str,
        section: SectionCode,
        row: RowName,
        number: u16,
        seats: u16,
    },
    #[error("seat {seat} is listed twice as {list}")]
    AttributeRepeated { list: &'static str, seat: SeatId },
    #[error("wheelchair space {0} has no companion seat next to it (list one of its neighbours in companion)")]
    WheelchairWithoutCompanion(SeatId),
    #[error("companion seat {0} is not next to a wheelchair space")]
    CompanionWithoutWheelchair(SeatId),
    #[error("seat {0} is listed both as a wheelchair space and as a companion seat")]
    WheelchairAndCompanion(SeatId),
}

impl SeatMap {
    /// Checks the map's own consistency; a map that passes can be laid out.
    pub fn validate(&self) -> Result<(), SeatMapError> {
        let mut tiers = HashSet::new();
        for tier in &self.tiers {
            if !tiers.insert(&tier.code) {
                return Err(SeatMapError::DuplicateTier(tier.code.clone()));
            }
            if !(0..=MAX_PRICE).contains(&tier.price) {
                return Err(SeatMapError::BadPrice(tier.code.clone()));
            }
            if !text_fits(&tier.name, MAX_NAME) {
                return Err(SeatMapError::BadName);
            }
        }
        if self.sections.is_empty() {
            return Err(SeatMapError::NoSections);
        }
        let mut sections = HashSet::new();
        let mut total: u64 = 0;
        for section in &self.sections {
            if !sections.insert(&section.code) {
                return Err(SeatMapError::DuplicateSection(section.code.clone()));
            }
            if !text_fits(&section.name, MAX_NAME) {
                return Err(SeatMapError::BadName);
            }
            if let Some(zone) = &section.standing {
                validate_zone(section, zone, &tiers)?;
                total += u64::from(zone.capacity);
                continue;
            }
            if section.rows.is_empty() {
                return Err(SeatMapError::EmptySection(section.code.clone()));
            }
            let mut rows = HashSet::new();
            for row in &section.rows {
                if !rows.insert(&row.name) {
                    return Err(SeatMapError::DuplicateRow(section.code.clone(), row.name.clone()));
                }
                if row.seats == 0 || row.seats > MAX_SEATS_PER_ROW {
                    return Err(SeatMapError::BadRowSize(section.code.clone(), row.name.clone()));
                }
                if !tiers.contains(&row.tier) {
                    return Err(SeatMapError::UnknownTier(
                        section.code.clone(),
                        row.name.clone(),
                        row.tier.clone(),
                    ));
                }
                row.attributes.validate(&section.code, &row.name, row.seats)?;
                total += u64::from(row.seats);
            }
        }
        if total > u64::from(MAX_SEATS_PER_EVENT) {
            return Err(SeatMapError::TooManySeats(total));
        }
        Ok(())
    }

    /// The attributes of the row a seat span belongs to.
    pub fn attributes_of(&self, span: &RowSpan) -> &SeatAttributes {
        &self.sections[span.section as usize].rows[span.row as usize].attributes
    }

    /// Whether any section is a standing zone.
    pub fn has_zones(&self) -> bool {
        self.sections.iter().any(|s| s.standing.is_some())
    }

    pub fn tier_price(&self, code: &TierCode) -> Option<i64> {
        self.tiers.iter().find(|t| &t.code == code).map(|t| t.price)
    }
}

fn validate_zone(section: &Section, zone: &Standing, tiers: &HashSet<&TierCode>) -> Result<(), SeatMapError> {
    if !section.rows.is_empty() {
        return Err(SeatMapError::RowsAndStanding(section.code.clone()));
    }
    if zone.capacity == 0 || zone.capacity > MAX_ZONE_CAPACITY {
        return Err(SeatMapError::BadCapacity(section.code.clone()));
    }
    if !tiers.contains(&zone.tier) {
        return Err(SeatMapError::UnknownZoneTier(section.code.clone(), zone.tier.clone()));
    }
    Ok(())
}

/// [`STANDING_ROW`] as a row name.
const STANDING_ROW_NAME: RowName = RowName(Inline::constant(STANDING_ROW));

/// The row name of standing places (see [`STANDING_ROW`]).
pub fn standing_row() -> RowName {
    STANDING_ROW_NAME
}

/// Where one row's seats (or one standing zone's places) sit in the flat seat index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowSpan {
    pub section: u32,
    /// The row's index in its section (0 for a standing zone).
    pub row: u32,
    /// Flat index of seat number 1.
    pub start: u32,
    /// Seats of the row, or places of the zone (at most [`MAX_ZONE_CAPACITY`]).
    pub seats: u16,
    /// The row's price in minor units.
    pub price: i64,
    /// The span is a standing zone: its places have no neighbours, any free one will do.
    pub standing: bool,
}

/// The flat index of a (validated) seat map: seat id <-> `u32` and per-row spans.
#[derive(Debug, Clone)]
pub struct SeatLayout {
    rows: Vec<RowSpan>,
    /// For each section, the range of its rows in `rows`.
    sections: Vec<std::ops::Range<usize>>,
    /// Each section's rows (positions in `rows`) by name, over the same ranges as `sections`:
    /// a seat's row is found by a binary search, without a copy of every row's name as a key.
    rows_by_name: Vec<u32>,
    /// Hashed with foldhash, not SipHash: every seat of every request and record is looked up
    /// here, and the keys are the organizer's section codes, not a caller's.
    section_by_code: HashMap<SectionCode, usize, foldhash::fast::RandomState>,
    /// Seats and places in all: flat indexes are `0..seats`. A seat's row is found by a binary
    /// search over the rows' starts (no per-seat table: a node holding ten million seats would
    /// spend 4 bytes on each in every layout).
    seats: u32,
    /// Shared with the event's record ([`crate::EventScheduled::seat_map`]), not copied.
    map: Arc<SeatMap>,
}

impl SeatLayout {
    /// Lays out a map; call [`SeatMap::validate`] first (an unknown tier prices at 0 here).
    pub fn new(map: impl Into<Arc<SeatMap>>) -> Self {
        let map = map.into();
        let mut rows = Vec::new();
        let mut sections = Vec::new();
        let mut section_by_code = HashMap::with_hasher(foldhash::fast::RandomState::default());
        let mut next: u32 = 0;
        for (si, section) in map.sections.iter().enumerate() {
            section_by_code.insert(section.code.clone(), si);
            let first = rows.len();
            if let Some(zone) = &section.standing {
                // Validated: the capacity fits a place number.
                let places = zone.capacity.min(u32::from(u16::MAX)) as u16;
                rows.push(RowSpan {
                    section: si as u32,
                    row: 0,
                    start: next,
                    seats: places,
                    price: map.tier_price(&zone.tier).unwrap_or(0),
                    standing: true,
                });
                next += u32::from(places);
            }
            for (ri, row) in section.rows.iter().enumerate() {
                rows.push(RowSpan {
                    section: si as u32,
                    row: ri as u32,
                    start: next,
                    seats: row.seats,
                    price: map.tier_price(&row.tier).unwrap_or(0),
                    standing: false,
                });
                next += u32::from(row.seats);
            }
            sections.push(first..rows.len());
        }
        let mut layout = Self {
            rows,
            sections,
            rows_by_name: Vec::new(),
            section_by_code,
            seats: next,
            map,
        };
        let mut rows_by_name: Vec<u32> = (0..layout.rows.len() as u32).collect();
        for range in &layout.sections {
            rows_by_name[range.clone()].sort_by(|&a, &b| layout.row_name(a).cmp(layout.row_name(b)));
        }
        layout.rows_by_name = rows_by_name;
        layout
    }

    /// The name of the row at a position in `rows` ([`STANDING_ROW`] for a standing zone).
    /// Compared as a code, not as text: a lookup's binary search makes no UTF-8 check and no
    /// variable-length comparison (the replay of a log looks up every seat of every record).
    fn row_name(&self, position: u32) -> &RowName {
        let span = &self.rows[position as usize];
        match span.standing {
            true => &STANDING_ROW_NAME,
            false => &self.map.sections[span.section as usize].rows[span.row as usize].name,
        }
    }

    pub fn map(&self) -> &SeatMap {
        &self.map
    }

    /// Number of seats.
    pub fn len(&self) -> usize {
        self.seats as usize
    }

    pub fn is_empty(&self) -> bool {
        self.seats == 0
    }

    pub fn index_of(&self, seat: &SeatId) -> Option<u32> {
        let section = self.section_index(&seat.section)?;
        let by_name = &self.rows_by_name[self.sections[section].clone()];
        let at = by_name
            .binary_search_by(|&position| self.row_name(position).cmp(&seat.row))
            .ok()?;
        let row = &self.rows[by_name[at] as usize];
        (seat.number >= 1 && seat.number <= row.seats).then(|| row.start + u32::from(seat.number) - 1)
    }

    pub fn seat_at(&self, index: u32) -> SeatId {
        let span = self.row_of(index);
        let section = &self.map.sections[span.section as usize];
        let row = match span.standing {
            true => standing_row(),
            false => section.rows[span.row as usize].name.clone(),
        };
        SeatId {
            section: section.code.clone(),
            row,
            number: (index - span.start + 1) as u16,
        }
    }

    /// The price tier of a seat or place.
    pub fn tier_of(&self, index: u32) -> &TierCode {
        let span = self.row_of(index);
        let section = &self.map.sections[span.section as usize];
        match (&section.standing, span.standing) {
            (Some(zone), true) => &zone.tier,
            _ => &section.rows[span.row as usize].tier,
        }
    }

    /// The span of a standing zone's places, if `section` is one.
    pub fn zone_span(&self, section: usize) -> Option<RowSpan> {
        self.section_rows(section).first().copied().filter(|span| span.standing)
    }

    /// The row a seat index belongs to. Panics when the index is not a seat of this layout.
    pub fn row_of(&self, index: u32) -> RowSpan {
        assert!(
            index < self.seats,
            "seat index {index} of a layout of {} seats",
            self.seats
        );
        // Rows are laid out in index order: the seat's row is the last one starting at or
        // before it (a row of no seats shares its start with the next and is never the last).
        let after = self.rows.partition_point(|r| r.start <= index);
        self.rows[after - 1]
    }

    pub fn price_of(&self, index: u32) -> i64 {
        self.row_of(index).price
    }

    /// Index of a section by code.
    pub fn section_index(&self, code: &SectionCode) -> Option<usize> {
        self.section_by_code.get(code).copied()
    }

    /// The rows of one section, front to back.
    pub fn section_rows(&self, section: usize) -> &[RowSpan] {
        &self.rows[self.sections[section].clone()]
    }

    pub fn section_count(&self) -> usize {
        self.sections.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testsuite::{seat_map, seated, standing};

    #[test]
    fn a_row_keeps_its_attributes_on_the_heap_only_when_it_has_any() {
        assert!(std::mem::size_of::<Row>() <= 32, "{} bytes", std::mem::size_of::<Row>());
        let plain: Row = serde_json::from_str(r#"{"name":"A","seats":10,"tier":"STD"}"#).unwrap();
        assert_eq!(plain.attributes, RowAttributes::default());
        assert!(plain.attributes.aisle.is_empty());
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"name":"A","seats":10,"tier":"STD"}"#
        );
        let text = r#"{"name":"A","seats":10,"tier":"STD","wheelchair":[1],"companion":[2],"aisle":[1,10]}"#;
        let special: Row = serde_json::from_str(text).unwrap();
        assert_eq!(
            (
                special.attributes.wheelchair.as_slice(),
                special.attributes.aisle.as_slice()
            ),
            (&[1][..], &[1, 10][..])
        );
        assert_eq!(serde_json::to_string(&special).unwrap(), text);
        assert_eq!(RowAttributes::from(SeatAttributes::default()), RowAttributes::default());
    }

    #[test]
    fn codes_are_inline_and_behave_like_their_text() {
        // A seat id is its two codes and a number: nothing on the heap.
        assert_eq!(std::mem::size_of::<SeatId>(), 16);
        let names = ["A", "AA", "AB", "B", "10", "9", "ZZZZ"];
        let mut codes: Vec<RowName> = names.iter().map(|n| RowName::parse(n).unwrap()).collect();
        let mut texts = names.to_vec();
        codes.sort();
        texts.sort();
        assert_eq!(codes.iter().map(RowName::as_str).collect::<Vec<_>>(), texts);
        let tier = TierCode::parse("SIXTEENCHARSLONG").unwrap();
        assert_eq!(serde_json::to_string(&tier).unwrap(), "\"SIXTEENCHARSLONG\"");
        assert_eq!(serde_json::from_str::<TierCode>("\"SIXTEENCHARSLONG\"").unwrap(), tier);
        assert_eq!(format!("{tier:?}"), "TierCode(\"SIXTEENCHARSLONG\")");
        // Escaped text is read too; what parse refuses, reading refuses.
        assert_eq!(serde_json::from_str::<RowName>("\"\\u0041\"").unwrap().as_str(), "A");
        assert!(serde_json::from_str::<TierCode>("\"SEVENTEENCHARSLNG\"").is_err());
        assert!(serde_json::from_str::<SectionCode>("\"a\"").is_err());
        assert!(serde_json::from_str::<SectionCode>("7").is_err());
        // Seat ids read the same way, and a wrong type is named as before (a string).
        let seat: SeatId = serde_json::from_str("\"101-C-\\u0037\"").unwrap();
        assert_eq!(seat, "101-C-7");
        let wrong = serde_json::from_str::<SeatId>("7").unwrap_err().to_string();
        assert!(
            wrong.starts_with("invalid type: integer `7`, expected a string"),
            "{wrong}"
        );
    }

    pub(crate) fn small_map() -> SeatMap {
        seat_map(
            &[("GOLD", "Gold", 9900), ("STD", "Standard", 4500)],
            vec![
                seated("A", "Floor A", &[("1", 4, "GOLD"), ("2", 3, "STD")]),
                seated("B", "Balcony", &[("1", 2, "STD")]),
            ],
        )
    }

    /// The layout of `map`, which must be valid.
    fn valid_layout(map: SeatMap) -> SeatLayout {
        map.validate().unwrap();
        SeatLayout::new(map)
    }

    #[test]
    fn prices_are_bounded_and_money_sums_are_checked() {
        for (price, ok) in [
            (0, true),
            (MAX_PRICE, true),
            (MAX_PRICE + 1, false),
            (-1, false),
            (i64::MAX, false),
        ] {
            let mut map = small_map();
            map.tiers[0].price = price;
            let expected = if ok {
                Ok(())
            } else {
                Err(SeatMapError::BadPrice(map.tiers[0].code.clone()))
            };
            assert_eq!(map.validate(), expected, "price {price}");
        }
        assert_eq!(checked_sum([MAX_PRICE; 20]), Some(20 * MAX_PRICE));
        assert_eq!(checked_sum([i64::MAX, 1]), None);
        assert_eq!(checked_sum([i64::MIN, -1]), None);
    }

    #[test]
    fn seat_ids_round_trip() {
        let id: SeatId = "101-C-7".parse().unwrap();
        assert_eq!(id.to_string(), "101-C-7");
        for bad in ["", "101-C", "101-C-0", "101-C-x", "a-C-1", "101-C-7-1", "101--7"] {
            assert!(bad.parse::<SeatId>().is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn a_seat_id_equals_its_text_form_only() {
        let id: SeatId = "101-C-7".parse().unwrap();
        assert_eq!(id, "101-C-7");
        for other in [
            "101-C-8",
            "101-D-7",
            "102-C-7",
            "101-C-07",
            "101-C-+7",
            "101-C-7-1",
            "101-C",
            "",
            "101-C-70",
        ] {
            assert_ne!(id, other, "{other}");
        }
    }

    #[test]
    fn layout_indexes_every_seat_once() {
        let layout = valid_layout(small_map());
        assert_eq!(layout.len(), 9);
        for i in 0..9 {
            let seat = layout.seat_at(i);
            assert_eq!(layout.index_of(&seat), Some(i), "{seat}");
            let row = layout.row_of(i);
            assert!(
                row.start <= i && i < row.start + u32::from(row.seats),
                "{seat} in {row:?}"
            );
        }
        assert!(std::panic::catch_unwind(|| layout.row_of(9)).is_err(), "9 is no seat");
        assert_eq!(layout.index_of(&"A-1-5".parse().unwrap()), None);
        assert_eq!(layout.index_of(&"C-1-1".parse().unwrap()), None);
        assert_eq!(layout.price_of(0), 9900);
        assert_eq!(layout.price_of(5), 4500);
    }

    #[test]
    fn invalid_maps_are_refused() {
        let mut map = small_map();
        map.sections[1].rows[0].tier = TierCode::parse("VIP").unwrap();
        assert!(matches!(map.validate(), Err(SeatMapError::UnknownTier(..))));
        let mut map = small_map();
        map.sections[0].rows[1].name = RowName::parse("1").unwrap();
        assert!(matches!(map.validate(), Err(SeatMapError::DuplicateRow(..))));
        let mut map = small_map();
        map.sections[0].rows[0].seats = 0;
        assert!(matches!(map.validate(), Err(SeatMapError::BadRowSize(..))));
        let mut map = small_map();
        map.sections.clear();
        assert_eq!(map.validate(), Err(SeatMapError::NoSections));
        assert!(HoldMinutes::new(4).is_err());
        assert!(HoldMinutes::new(16).is_err());
        assert!(serde_json::from_str::<HoldMinutes>("0").is_err());
        assert!(Currency::parse("eur").is_err());
    }

    fn with_attributes(attributes: serde_json::Value) -> SeatMap {
        let mut map = small_map();
        map.sections[0].rows[0].attributes = serde_json::from_value(attributes).unwrap();
        map
    }

    #[test]
    fn seat_attributes_are_checked_with_precise_errors() {
        let ok = with_attributes(serde_json::json!({
            "wheelchair": [1, 4], "companion": [2, 3], "restricted_view": [4], "aisle": [1, 4]}));
        assert_eq!(ok.validate(), Ok(()));
        let cases = [
            (
                serde_json::json!({"aisle": [5]}),
                "row 1 in section A lists seat 5 as aisle, but its seats are 1 to 4",
            ),
            (
                serde_json::json!({"restricted_view": [0]}),
                "row 1 in section A lists seat 0 as restricted_view, but its seats are 1 to 4",
            ),
            (
                serde_json::json!({"aisle": [1, 1]}),
                "seat A-1-1 is listed twice as aisle",
            ),
            (
                serde_json::json!({"wheelchair": [1], "companion": [3]}),
                "wheelchair space A-1-1 has no companion seat next to it (list one of its neighbours in companion)",
            ),
            (
                serde_json::json!({"wheelchair": [1], "companion": [2, 4]}),
                "companion seat A-1-4 is not next to a wheelchair space",
            ),
            (
                serde_json::json!({"wheelchair": [1, 2], "companion": [2]}),
                "seat A-1-2 is listed both as a wheelchair space and as a companion seat",
            ),
        ];
        for (attributes, message) in cases {
            let map = with_attributes(attributes.clone());
            let error = map.validate().expect_err(&attributes.to_string());
            assert_eq!(error.to_string(), message);
        }
    }

    #[test]
    fn rows_without_attributes_keep_their_bytes() {
        let map = small_map();
        let json = serde_json::to_string(&map.sections[0].rows[0]).unwrap();
        assert_eq!(json, r#"{"name":"1","seats":4,"tier":"GOLD"}"#);
        let map = with_attributes(serde_json::json!({"wheelchair": [4], "companion": [3]}));
        let json = serde_json::to_string(&map.sections[0].rows[0]).unwrap();
        assert_eq!(
            json,
            r#"{"name":"1","seats":4,"tier":"GOLD","wheelchair":[4],"companion":[3]}"#
        );
        let back: Row = serde_json::from_str(&json).unwrap();
        assert_eq!(back, map.sections[0].rows[0]);
    }

    fn mixed_map() -> SeatMap {
        seat_map(
            &[("GOLD", "Gold", 9900), ("GA", "Standing", 3500)],
            vec![
                seated("A", "Floor A", &[("1", 4, "GOLD")]),
                standing("FLOOR", "Standing floor", 5, "GA"),
            ],
        )
    }

    #[test]
    fn a_seat_is_found_by_its_row_name_whatever_order_and_length_the_names_have() {
        // Rows front to back in no order of their names, which differ in length and share
        // prefixes: the lookup's binary search compares them as codes.
        let names = ["10", "9", "AA", "A", "1", "B", "ZZZZ", "100"];
        let rows: Vec<(&str, u16, &str)> = names.iter().map(|n| (*n, 3, "STD")).collect();
        let layout = valid_layout(seat_map(
            &[("STD", "Standard", 4500)],
            vec![seated("S", "Stalls", &rows), seated("T", "Tier", &[("A", 2, "STD")])],
        ));
        assert_eq!(layout.len(), 26);
        for i in 0..26 {
            assert_eq!(layout.index_of(&layout.seat_at(i)), Some(i), "{}", layout.seat_at(i));
        }
        assert_eq!(layout.seat_at(0).to_string(), "S-10-1");
        assert_eq!(layout.index_of(&"S-AA-2".parse().unwrap()), Some(3 * 2 + 1));
        for absent in [
            "S-0-1", "S-2-1", "S-AB-1", "S-C-1", "S-ZZZ-1", "S-GA-1", "T-B-1", "S-A-4",
        ] {
            assert_eq!(layout.index_of(&absent.parse().unwrap()), None, "{absent}");
        }
    }

    #[test]
    fn a_standing_zone_lays_out_as_one_span_of_places() {
        let layout = valid_layout(mixed_map());
        assert_eq!(layout.len(), 9);
        let zone = layout.zone_span(1).expect("FLOOR is a zone");
        assert_eq!((zone.start, zone.seats, zone.price, zone.standing), (4, 5, 3500, true));
        assert_eq!(layout.zone_span(0), None, "A is seated");
        assert_eq!(layout.seat_at(4).to_string(), "FLOOR-GA-1");
        assert_eq!(layout.seat_at(8).to_string(), "FLOOR-GA-5");
        for i in 0..9 {
            assert_eq!(layout.index_of(&layout.seat_at(i)), Some(i));
        }
        assert_eq!(layout.index_of(&"FLOOR-GA-6".parse().unwrap()), None);
        assert_eq!(layout.index_of(&"FLOOR-1-1".parse().unwrap()), None);
        assert_eq!(layout.tier_of(4).as_str(), "GA");
        assert_eq!(layout.tier_of(0).as_str(), "GOLD");
        assert!(!layout.row_of(0).standing);
    }

    #[test]
    fn a_seated_section_serialises_as_before_and_a_zone_without_rows() {
        let json = serde_json::to_value(small_map()).unwrap();
        assert!(json["sections"][0].get("standing").is_none());
        let zone = serde_json::to_value(mixed_map()).unwrap();
        assert_eq!(
            zone["sections"][1],
            serde_json::json!({"code": "FLOOR", "name": "Standing floor", "standing": {"capacity": 5, "tier": "GA"}})
        );
    }

    #[test]
    fn invalid_zones_are_refused() {
        let floor = SectionCode::parse("FLOOR").unwrap();
        let mut map = mixed_map();
        map.sections[1].rows = small_map().sections[0].rows.clone();
        assert_eq!(map.validate(), Err(SeatMapError::RowsAndStanding(floor.clone())));
        for (capacity, ok) in [
            (0, false),
            (1, true),
            (MAX_ZONE_CAPACITY, true),
            (MAX_ZONE_CAPACITY + 1, false),
        ] {
            let mut map = mixed_map();
            map.sections[1].standing.as_mut().unwrap().capacity = capacity;
            let expected = if ok {
                Ok(())
            } else {
                Err(SeatMapError::BadCapacity(floor.clone()))
            };
            assert_eq!(map.validate(), expected, "capacity {capacity}");
        }
        let mut map = mixed_map();
        map.sections[1].standing.as_mut().unwrap().tier = TierCode::parse("VIP").unwrap();
        assert!(matches!(map.validate(), Err(SeatMapError::UnknownZoneTier(..))));
        // Zones count towards the event's limit.
        let mut map = mixed_map();
        for n in 0..4 {
            let mut zone = map.sections[1].clone();
            zone.code = SectionCode::parse(&format!("Z{n}")).unwrap();
            zone.standing.as_mut().unwrap().capacity = MAX_ZONE_CAPACITY;
            map.sections.push(zone);
        }
        assert!(matches!(map.validate(), Err(SeatMapError::TooManySeats(200_009))));
    }
}

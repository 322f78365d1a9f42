//! The row model between the projection and the databases.
//!
//! The projection says *what* changes as plain [`Op`]s on tables described by [`Table`]; each
//! ledger implementation only knows *how* to write an op set-wise in its dialect (PostgreSQL:
//! one `INSERT ... SELECT FROM UNNEST` or `UPDATE ... FROM UNNEST` per op; SQLite: multi-row
//! `VALUES`). No op ever becomes one statement per row.
//!
//! The projection builds typed rows: `ledger_table!` declares each table and its row struct
//! together (fields = columns, in order) and `ledger_change!` each kind of update (the key
//! columns, then the set ones), so a missing or misspelt column is a compile error. [`insert`]
//! and [`update`] turn them into ops.

use chrono::{DateTime, SecondsFormat, Utc};
use uuid::Uuid;

/// The type of a column, as both dialects store it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Uuid,
    Text,
    /// Any integer column (`integer` or `bigint`).
    Int,
    Bool,
    Time,
    /// JSON text (`jsonb` in PostgreSQL).
    Json,
}

impl Ty {
    /// The PostgreSQL array type used to send a column of this type.
    pub fn pg_array(self) -> &'static str {
        match self {
            Ty::Uuid => "uuid[]",
            Ty::Text | Ty::Json => "text[]",
            Ty::Int => "int8[]",
            Ty::Bool => "bool[]",
            Ty::Time => "timestamptz[]",
        }
    }
}

/// One value of one cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Val {
    Null,
    Uuid(Uuid),
    Text(String),
    Int(i64),
    Bool(bool),
    Time(DateTime<Utc>),
}

impl Val {
    pub fn text(s: impl Into<String>) -> Self {
        Val::Text(s.into())
    }

    pub fn opt<T: Into<Val>>(v: Option<T>) -> Self {
        v.map_or(Val::Null, Into::into)
    }

    pub fn as_uuid(&self) -> Option<Uuid> {
        match self {
            Val::Uuid(u) => Some(*u),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Val::Text(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(*i),
            Val::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Val::Bool(b) => Some(*b),
            Val::Int(i) => Some(*i != 0),
            _ => None,
        }
    }

    /// Whether this value can be stored in a column of type `ty` (`Null` fits any).
    pub fn fits(&self, ty: Ty) -> bool {
        matches!(
            (self, ty),
            (Val::Null, _)
                | (Val::Uuid(_), Ty::Uuid)
                | (Val::Text(_), Ty::Text | Ty::Json)
                | (Val::Int(_), Ty::Int)
                | (Val::Bool(_), Ty::Bool)
                | (Val::Time(_), Ty::Time)
        )
    }

    pub fn as_time(&self) -> Option<DateTime<Utc>> {
        match self {
            Val::Time(t) => Some(*t),
            _ => None,
        }
    }
}

/// `Val` from each type a column holds, one variant per type.
macro_rules! val_from {
    ($($ty:ty => $variant:ident),* $(,)?) => {
        $(impl From<$ty> for Val {
            fn from(v: $ty) -> Self {
                Val::$variant(v)
            }
        })*
    };
}

val_from!(Uuid => Uuid, String => Text, i64 => Int, bool => Bool, DateTime<Utc> => Time);

impl From<&str> for Val {
    fn from(v: &str) -> Self {
        Val::Text(v.to_owned())
    }
}

impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Self {
        Val::opt(v)
    }
}

/// How SQLite stores a time: RFC 3339 in UTC with microseconds, so text order is time order
/// and the precision is PostgreSQL's.
pub fn sqlite_time(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A column of a ledger table.
#[derive(Debug, Clone, Copy)]
pub struct Col {
    pub name: &'static str,
    pub ty: Ty,
}

const fn c(name: &'static str, ty: Ty) -> Col {
    Col { name, ty }
}

/// A ledger table: its name and the columns the projector writes, in order.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub cols: &'static [Col],
}

impl Table {
    /// The column called `name` (a programming error if it does not exist).
    pub fn col(&self, name: &str) -> Col {
        *self
            .cols
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{} has no column {name}", self.name))
    }
}

use Ty::*;

/// A typed row of a ledger table: a value for every column, in the table's order.
pub trait Row {
    fn table() -> &'static Table;
    fn into_values(self) -> Vec<Val>;
}

/// A typed change to rows of a ledger table: the key columns that find the row, then the
/// columns it sets.
pub trait Change {
    fn table() -> &'static Table;
    fn key() -> &'static [&'static str];
    fn set() -> &'static [&'static str];
    fn into_values(self) -> Vec<Val>;
}

/// A change made on a row not yet written: it sets the same fields the update would.
pub trait ApplyTo<R> {
    fn apply_to(self, row: &mut R);
}

/// Declares a ledger table and its typed row together, so the struct's fields are the table's
/// columns in order and a misspelt column is a compile error. `+ order` puts the columns every
/// order table starts with ([`OrderCols`]) first.
macro_rules! ledger_table {
    ($(#[$m:meta])* $table:ident = $name:literal, $row:ident $(+ $order:ident)? {
        $($(#[$fm:meta])* $col:ident: $ty:ty => $sql:ident),* $(,)?
    }) => {
        pub static $table: Table = Table {
            name: $name,
            cols: ledger_table!(@cols $($order)? [$(c(stringify!($col), $sql)),*]),
        };
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $row {
            $(pub $order: OrderCols,)?
            $($(#[$fm])* pub $col: $ty),*
        }
        impl Row for $row {
            fn table() -> &'static Table {
                &$table
            }
            fn into_values(self) -> Vec<Val> {
                #[allow(unused_mut)]
                let mut values: Vec<Val> = Vec::with_capacity($table.cols.len());
                $(values.extend(self.$order.into_values());)?
                $(values.push(Val::from(self.$col));)*
                values
            }
        }
    };
    (@cols order [$($c:expr),*]) => {
        &[
            c("reservation_id", Uuid),
            c("event_id", Uuid),
            c("customer", Text),
            c("seats", Text),
            c("seat_count", Int),
            c("amount", Int),
            c("currency", Text),
            $($c),*
        ]
    };
    (@cols [$($c:expr),*]) => {
        &[$($c),*]
    };
}

/// Declares a typed change to rows of `$table` (typed `$row`): the `key` fields find the row,
/// the `set` fields are written. Their names must be columns of the table (checked by a test).
macro_rules! ledger_change {
    ($(#[$m:meta])* $change:ident on $table:ident ($row:ident),
        key { $($k:ident: $kty:ty),* $(,)? },
        set { $($s:ident: $sty:ty),* $(,)? }
    ) => {
        impl ApplyTo<$row> for $change {
            #[allow(clippy::useless_conversion, reason = "a set field may be the Option of its column")]
            fn apply_to(self, row: &mut $row) {
                $(row.$s = self.$s.into();)*
            }
        }
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $change {
            $(pub $k: $kty,)*
            $(pub $s: $sty,)*
        }
        impl Change for $change {
            fn table() -> &'static Table {
                &$table
            }
            fn key() -> &'static [&'static str] {
                &[$(stringify!($k)),*]
            }
            fn set() -> &'static [&'static str] {
                &[$(stringify!($s)),*]
            }
            fn into_values(self) -> Vec<Val> {
                vec![$(Val::from(self.$k),)* $(Val::from(self.$s),)*]
            }
        }
    };
}

/// The columns that start both a reservation's and a booking's row: the reservation, its
/// event, the customer, the seats (comma-separated) and their count, the amount and its currency.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderCols {
    pub reservation_id: uuid::Uuid,
    pub event_id: uuid::Uuid,
    pub customer: String,
    pub seats: String,
    pub seat_count: i64,
    pub amount: i64,
    pub currency: String,
}

impl OrderCols {
    fn into_values(self) -> [Val; 7] {
        [
            self.reservation_id.into(),
            self.event_id.into(),
            self.customer.into(),
            self.seats.into(),
            self.seat_count.into(),
            self.amount.into(),
            self.currency.into(),
        ]
    }
}

type Time = DateTime<Utc>;
type Id = uuid::Uuid;

ledger_table!(
    /// An event in the catalogue, with its current seat map as JSON.
    EVENTS = "events", EventRow {
        event_id: Id => Uuid,
        organizer: String => Text,
        title: String => Text,
        artist: String => Text,
        venue: String => Text,
        city: String => Text,
        starts_at: Time => Time,
        onsale_at: Time => Time,
        hold_minutes: i64 => Int,
        max_seats_per_order: i64 => Int,
        currency: String => Text,
        seat_map: String => Json,
        scheduled_at: Time => Time,
        seat_map_at: Time => Time,
    }
);

ledger_table!(
    /// A seat of an event's current map and its state now.
    SEATS = "seats", SeatRow {
        event_id: Id => Uuid,
        seat: String => Text,
        section: String => Text,
        row_name: String => Text,
        number: i64 => Int,
        tier: String => Text,
        price: i64 => Int,
        state: &'static str => Text,
        reservation_id: Option<Id> => Uuid,
        updated_at: Time => Time,
    }
);

ledger_table!(
    /// A reservation and its status now.
    RESERVATIONS = "reservations", ReservationRow + order {
        hold_until: Time => Time,
        reserved_at: Time => Time,
        status: &'static str => Text,
        status_at: Time => Time,
    }
);

ledger_table!(
    /// A booking: a reservation paid for, until it is cancelled.
    BOOKINGS = "bookings", BookingRow + order {
        provider_event_id: String => Text,
        late: bool => Bool,
        booked_at: Time => Time,
        cancelled_at: Option<Time> => Time,
    }
);

ledger_table!(
    /// A payment the provider reported: paid (with an amount) or failed (with a message).
    PAYMENTS = "payments", PaymentRow {
        provider_event_id: String => Text,
        payment_intent: String => Text,
        reservation_id: Id => Uuid,
        event_id: Id => Uuid,
        amount: Option<i64> => Int,
        currency: Option<String> => Text,
        status: &'static str => Text,
        received_at: Time => Time,
        refunded_at: Option<Time> => Time,
        message: Option<String> => Text,
    }
);

ledger_table!(
    /// A payment given back, and why.
    REFUNDS = "refunds", RefundRow {
        provider_event_id: String => Text,
        reservation_id: Id => Uuid,
        event_id: Id => Uuid,
        customer: String => Text,
        amount: i64 => Int,
        currency: String => Text,
        reason: &'static str => Text,
        refunded_at: Time => Time,
    }
);

ledger_table!(
    /// One line of a double-entry money transaction; a transaction's lines sum to zero.
    MONEY_ENTRIES = "money_entries", MoneyEntry {
        txn_id: Id => Uuid,
        line: i64 => Int,
        event_id: Id => Uuid,
        reservation_id: Id => Uuid,
        kind: &'static str => Text,
        account: &'static str => Text,
        section: Option<String> => Text,
        tier: Option<String> => Text,
        amount: i64 => Int,
        currency: String => Text,
        at: Time => Time,
    }
);

ledger_table!(
    /// One change of one seat, with the seat's place and price when it happened.
    SEAT_HISTORY = "seat_history", SeatHistoryRow {
        event_id: Id => Uuid,
        sequence: i64 => Int,
        seat: String => Text,
        kind: &'static str => Text,
        reservation_id: Option<Id> => Uuid,
        section: String => Text,
        tier: String => Text,
        price: i64 => Int,
        at: Time => Time,
    }
);

ledger_change!(
    /// A new seat map for an event the ledger already has.
    EventMapChange on EVENTS (EventRow),
    key { event_id: Id },
    set { seat_map: String, seat_map_at: Time }
);

ledger_change!(
    /// A seat's new state.
    SeatChange on SEATS (SeatRow),
    key { event_id: Id, seat: String },
    set { state: &'static str, reservation_id: Option<Id>, updated_at: Time }
);

ledger_change!(
    /// A reservation's new status.
    ReservationChange on RESERVATIONS (ReservationRow),
    key { reservation_id: Id },
    set { status: &'static str, status_at: Time }
);

ledger_change!(
    /// A booking cancelled.
    BookingCancel on BOOKINGS (BookingRow),
    key { reservation_id: Id },
    set { cancelled_at: Time }
);

ledger_change!(
    /// A payment's new status.
    PaymentChange on PAYMENTS (PaymentRow),
    key { provider_event_id: String },
    set { status: &'static str, refunded_at: Time }
);

/// Every table the projector writes, for dumps and comparisons (positions last).
pub static ALL_TABLES: &[&Table] = &[
    &EVENTS,
    &SEATS,
    &RESERVATIONS,
    &BOOKINGS,
    &PAYMENTS,
    &REFUNDS,
    &MONEY_ENTRIES,
    &SEAT_HISTORY,
];

/// The tables the projector only inserts into: it never updates them, deletes from them or
/// looks a row up in them by key, so a fresh generation can be filled without their keys (see
/// [`crate::Ledger::defer_indexes`]).
pub static APPEND_ONLY: &[&Table] = &[&REFUNDS, &MONEY_ENTRIES, &SEAT_HISTORY];

/// One set-wise change to one table.
#[derive(Debug, Clone)]
pub enum Op {
    /// Insert `rows`, each with a value for every column of `table`, in order.
    Insert { table: &'static Table, rows: Vec<Vec<Val>> },
    /// For each row (`key` values then `set` values), set the `set` columns of the row whose
    /// `key` columns match. Keys are unique within one op.
    Update {
        table: &'static Table,
        key: Vec<Col>,
        set: Vec<Col>,
        rows: Vec<Vec<Val>>,
    },
    /// Delete every row whose `col` is one of `values`.
    Delete {
        table: &'static Table,
        col: Col,
        values: Vec<Val>,
    },
}

impl Op {
    pub fn is_empty(&self) -> bool {
        match self {
            Op::Insert { rows, .. } | Op::Update { rows, .. } => rows.is_empty(),
            Op::Delete { values, .. } => values.is_empty(),
        }
    }

    /// How many rows it touches (for logs and metrics).
    pub fn len(&self) -> usize {
        match self {
            Op::Insert { rows, .. } | Op::Update { rows, .. } => rows.len(),
            Op::Delete { values, .. } => values.len(),
        }
    }
}

/// The insert of typed `rows`.
pub fn insert<R: Row>(rows: impl IntoIterator<Item = R>) -> Op {
    let table = R::table();
    let rows = rows.into_iter().map(|r| checked(table.cols, r.into_values())).collect();
    Op::Insert { table, rows }
}

/// The update of typed `changes`.
pub fn update<C: Change>(changes: impl IntoIterator<Item = C>) -> Op {
    let table = C::table();
    let key: Vec<Col> = C::key().iter().map(|k| table.col(k)).collect();
    let set: Vec<Col> = C::set().iter().map(|s| table.col(s)).collect();
    let cols: Vec<Col> = key.iter().chain(&set).copied().collect();
    let rows = changes.into_iter().map(|r| checked(&cols, r.into_values())).collect();
    Op::Update { table, key, set, rows }
}

/// `values`, after checking (in debug builds) that each fits its column's type.
fn checked(cols: &[Col], values: Vec<Val>) -> Vec<Val> {
    debug_assert_eq!(cols.len(), values.len(), "a value for every column");
    debug_assert!(
        cols.iter().zip(&values).all(|(c, v)| v.fits(c.ty)),
        "values {values:?} do not fit columns {cols:?}"
    );
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty update of every typed change.
    fn every_update() -> [Op; 5] {
        [
            update(Vec::<EventMapChange>::new()),
            update(Vec::<SeatChange>::new()),
            update(Vec::<ReservationChange>::new()),
            update(Vec::<BookingCancel>::new()),
            update(Vec::<PaymentChange>::new()),
        ]
    }

    /// Every typed change names columns its table has (`Table::col` panics otherwise).
    #[test]
    fn every_change_names_columns_of_its_table() {
        for op in every_update() {
            let Op::Update { table, key, set, .. } = op else {
                unreachable!()
            };
            assert_eq!(key.len() + set.len(), key.iter().chain(&set).count(), "{}", table.name);
            assert!(!set.is_empty(), "{} changes something", table.name);
        }
    }

    /// A table the projector changes, deletes from or looks up keeps its key while a fresh
    /// generation is filled: it must not be listed as append-only.
    #[test]
    fn append_only_tables_are_never_changed_or_looked_up() {
        let changed = every_update().map(|op| match op {
            Op::Update { table, .. } => table.name,
            _ => unreachable!(),
        });
        // Deleted from (an event's seats when its map changes) and looked up (`Ledger::lookup`).
        let keyed = [SEATS.name, EVENTS.name, RESERVATIONS.name];
        for table in APPEND_ONLY {
            assert!(!changed.contains(&table.name), "{} is updated", table.name);
            assert!(!keyed.contains(&table.name), "{} is keyed", table.name);
        }
    }

    #[test]
    fn order_tables_start_with_the_order_columns() {
        for table in [&RESERVATIONS, &BOOKINGS] {
            let names: Vec<_> = table.cols.iter().take(7).map(|c| c.name).collect();
            assert_eq!(
                names,
                [
                    "reservation_id",
                    "event_id",
                    "customer",
                    "seats",
                    "seat_count",
                    "amount",
                    "currency"
                ]
            );
        }
        assert_eq!(BOOKINGS.cols.len(), 11);
    }
}

//! The row model between the projection and the databases.
//!
//! The projection says *what* changes as plain [`Op`]s on tables described by [`Table`]; each
//! ledger implementation only knows *how* to write an op set-wise in its dialect (PostgreSQL:
//! one `INSERT ... SELECT FROM UNNEST` or `UPDATE ... FROM UNNEST` per op; SQLite: multi-row
//! `VALUES`). No op ever becomes one statement per row.

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

pub static EVENTS: Table = Table {
    name: "events",
    cols: &[
        c("event_id", Uuid),
        c("organizer", Text),
        c("title", Text),
        c("artist", Text),
        c("venue", Text),
        c("city", Text),
        c("starts_at", Time),
        c("onsale_at", Time),
        c("hold_minutes", Int),
        c("max_seats_per_order", Int),
        c("currency", Text),
        c("seat_map", Json),
        c("scheduled_at", Time),
        c("seat_map_at", Time),
    ],
};

pub static SEATS: Table = Table {
    name: "seats",
    cols: &[
        c("event_id", Uuid),
        c("seat", Text),
        c("section", Text),
        c("row_name", Text),
        c("number", Int),
        c("tier", Text),
        c("price", Int),
        c("state", Text),
        c("reservation_id", Uuid),
        c("updated_at", Time),
    ],
};

/// A table of orders: the columns that start both a reservation's and a booking's row (the
/// reservation, its event, the customer, the seats and their count, the amount and its
/// currency), then the table's own.
macro_rules! order_table {
    ($name:literal, $($col:expr),* $(,)?) => {
        Table {
            name: $name,
            cols: &[
                c("reservation_id", Uuid),
                c("event_id", Uuid),
                c("customer", Text),
                c("seats", Text),
                c("seat_count", Int),
                c("amount", Int),
                c("currency", Text),
                $($col),*
            ],
        }
    };
}

pub static RESERVATIONS: Table = order_table!(
    "reservations",
    c("hold_until", Time),
    c("reserved_at", Time),
    c("status", Text),
    c("status_at", Time),
);

pub static BOOKINGS: Table = order_table!(
    "bookings",
    c("provider_event_id", Text),
    c("late", Bool),
    c("booked_at", Time),
    c("cancelled_at", Time),
);

pub static PAYMENTS: Table = Table {
    name: "payments",
    cols: &[
        c("provider_event_id", Text),
        c("payment_intent", Text),
        c("reservation_id", Uuid),
        c("event_id", Uuid),
        c("amount", Int),
        c("currency", Text),
        c("status", Text),
        c("received_at", Time),
        c("refunded_at", Time),
        c("message", Text),
    ],
};

pub static REFUNDS: Table = Table {
    name: "refunds",
    cols: &[
        c("provider_event_id", Text),
        c("reservation_id", Uuid),
        c("event_id", Uuid),
        c("customer", Text),
        c("amount", Int),
        c("currency", Text),
        c("reason", Text),
        c("refunded_at", Time),
    ],
};

pub static MONEY_ENTRIES: Table = Table {
    name: "money_entries",
    cols: &[
        c("txn_id", Uuid),
        c("line", Int),
        c("event_id", Uuid),
        c("reservation_id", Uuid),
        c("kind", Text),
        c("account", Text),
        c("section", Text),
        c("tier", Text),
        c("amount", Int),
        c("currency", Text),
        c("at", Time),
    ],
};

pub static SEAT_HISTORY: Table = Table {
    name: "seat_history",
    cols: &[
        c("event_id", Uuid),
        c("sequence", Int),
        c("seat", Text),
        c("kind", Text),
        c("reservation_id", Uuid),
        c("section", Text),
        c("tier", Text),
        c("price", Int),
        c("at", Time),
    ],
};

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

/// Builds an insert op: `rows` hold a value for every column of `table`, in order.
pub fn insert(table: &'static Table, rows: Vec<Vec<Val>>) -> Op {
    Op::Insert { table, rows }
}

/// Builds an update op from column names.
pub fn update(table: &'static Table, key: &[&str], set: &[&str], rows: Vec<Vec<Val>>) -> Op {
    Op::Update {
        table,
        key: key.iter().map(|k| table.col(k)).collect(),
        set: set.iter().map(|s| table.col(s)).collect(),
        rows,
    }
}

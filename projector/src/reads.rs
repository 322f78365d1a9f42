//! The ledger's reads, written once over [`Ledger::query`] for both dialects.
//!
//! Each read names the Rust type of every column it selects ([`query_as`] with a tuple), so a
//! row is destructured by name and a column read as the wrong type is a [`LedgerError::Corrupt`],
//! never a silent default.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use frontrow_schema::{CustomerId, EventId, SeatId};
use uuid::Uuid;

use crate::LedgerError;
use crate::ledger::*;
use crate::rows::{Ty, Val};

fn corrupt(what: &str) -> LedgerError {
    LedgerError::Corrupt(format!("unexpected {what}"))
}

/// A Rust type one selected column is read as: its column type and how a value becomes one.
trait Cell: Sized {
    const TY: Ty;
    /// The value as `Self`, or back again if it is not one.
    fn from_val(v: Val) -> Result<Self, Val>;
}

macro_rules! cell {
    ($($t:ty => $ty:ident, $v:pat => $out:expr);* $(;)?) => {
        $(impl Cell for $t {
            const TY: Ty = Ty::$ty;
            fn from_val(v: Val) -> Result<Self, Val> {
                match v {
                    $v => Ok($out),
                    other => Err(other),
                }
            }
        })*
    };
}

cell!(
    Uuid => Uuid, Val::Uuid(u) => u;
    String => Text, Val::Text(s) => s;
    i64 => Int, Val::Int(i) => i;
    DateTime<Utc> => Time, Val::Time(t) => t;
);

impl Cell for bool {
    const TY: Ty = Ty::Bool;
    fn from_val(v: Val) -> Result<Self, Val> {
        match v {
            Val::Bool(b) => Ok(b),
            // SQLite keeps a boolean as an integer.
            Val::Int(i) => Ok(i != 0),
            other => Err(other),
        }
    }
}

impl<T: Cell> Cell for Option<T> {
    const TY: Ty = T::TY;
    fn from_val(v: Val) -> Result<Self, Val> {
        match v {
            Val::Null => Ok(None),
            v => T::from_val(v).map(Some),
        }
    }
}

/// A selected row as a tuple of [`Cell`]s, one per column in order.
trait FromRow: Sized {
    const TYPES: &'static [Ty];
    fn from_row(row: Vec<Val>) -> Result<Self, LedgerError>;
}

macro_rules! from_row {
    ($($t:ident),+) => {
        impl<$($t: Cell),+> FromRow for ($($t,)+) {
            const TYPES: &'static [Ty] = &[$($t::TY),+];
            fn from_row(row: Vec<Val>) -> Result<Self, LedgerError> {
                let mut cells = row.into_iter().enumerate();
                Ok(($({
                    let (i, v) = cells.next().ok_or_else(|| corrupt("short row"))?;
                    $t::from_val(v).map_err(|v| corrupt(&format!("{v:?} in column {i}")))?
                },)+))
            }
        }
    };
}

from_row!(A);
from_row!(A, B);
from_row!(A, B, C);
from_row!(A, B, C, D);
from_row!(A, B, C, D, E, F, G, H);
from_row!(A, B, C, D, E, F, G, H, I, J, K);

/// The rows of `sql` with `params`, each read as the tuple `R`.
async fn query_as<R: FromRow, L: Ledger + ?Sized>(
    ledger: &L,
    sql: &str,
    params: Vec<Val>,
) -> Result<Vec<R>, LedgerError> {
    rows_as(ledger.query(sql, params, R::TYPES).await?)
}

/// A read of rows of the tuple `R`, for [`Ledger::query_together`].
fn read_of<R: FromRow>(sql: impl Into<String>, params: Vec<Val>) -> Read {
    Read {
        sql: sql.into(),
        params,
        types: R::TYPES,
    }
}

/// Rows as the tuple `R`.
fn rows_as<R: FromRow>(rows: Vec<Vec<Val>>) -> Result<Vec<R>, LedgerError> {
    rows.into_iter().map(R::from_row).collect()
}

type Time = DateTime<Utc>;

/// A customer's booking as the bookings read returns it.
type BookingRow = (
    Uuid,
    Uuid,
    String,
    String,
    Time,
    String,
    i64,
    String,
    bool,
    Time,
    Option<Time>,
);

/// At most `limit` of `customer`'s bookings, newest first, strictly after `after`.
fn bookings_read(customer: &CustomerId, after: Option<BookingCursor>, limit: usize) -> Read {
    // Newest first, ties (one batch books many at one instant) by reservation id; a page
    // starts strictly after its cursor in that order.
    let (from, mut params) = match after {
        None => ("", vec![customer.as_str().into()]),
        Some(c) => (
            "AND (b.booked_at < $2 OR (b.booked_at = $2 AND b.reservation_id > $3))",
            vec![customer.as_str().into(), Val::Time(c.at), Val::Uuid(c.id)],
        ),
    };
    let limit_at = params.len() + 1;
    params.push(Val::Int(i64::try_from(limit).unwrap_or(i64::MAX)));
    let sql = format!(
        "SELECT b.reservation_id, b.event_id, e.title, e.venue, e.starts_at, b.seats, b.amount,
                b.currency, b.late, b.booked_at, b.cancelled_at
         FROM bookings b JOIN events e ON e.event_id = b.event_id
         WHERE b.customer = $1 {from}
         ORDER BY b.booked_at DESC, b.reservation_id
         LIMIT ${limit_at}"
    );
    read_of::<BookingRow>(sql, params)
}

fn bookings_of(rows: Vec<Vec<Val>>) -> Result<Vec<CustomerBooking>, LedgerError> {
    let booking = |(
        reservation_id,
        event_id,
        title,
        venue,
        starts_at,
        seats,
        amount,
        currency,
        late,
        booked_at,
        cancelled_at,
    ): BookingRow| {
        CustomerBooking {
            reservation_id,
            event_id,
            title,
            venue,
            starts_at,
            seats: seats.split(',').map(str::to_owned).collect(),
            amount,
            currency,
            late,
            booked_at,
            status: if cancelled_at.is_some() {
                BookingStatus::Cancelled
            } else {
                BookingStatus::Booked
            },
            cancelled_at,
        }
    };
    Ok(rows_as::<BookingRow>(rows)?.into_iter().map(booking).collect())
}

/// How many of `customer`'s bookings stand, and how many were cancelled.
fn booking_counts_read(customer: &CustomerId) -> Read {
    read_of::<(i64, i64)>(
        "SELECT COUNT(*) - COUNT(cancelled_at), COUNT(cancelled_at) FROM bookings WHERE customer = $1",
        vec![customer.as_str().into()],
    )
}

fn booking_counts_of(rows: Vec<Vec<Val>>) -> Result<(i64, i64), LedgerError> {
    Ok(rows_as::<(i64, i64)>(rows)?.first().copied().unwrap_or_default())
}

#[async_trait]
impl<L: Ledger + ?Sized> LedgerReads for L {
    async fn customer_bookings_and_counts(
        &self,
        customer: &CustomerId,
        after: Option<BookingCursor>,
        limit: usize,
    ) -> Result<(Vec<CustomerBooking>, (i64, i64)), LedgerError> {
        // One snapshot: a booking that lands between the page and the counts would show in one
        // and not the other.
        let [page, counts]: [Vec<Vec<Val>>; 2] = self
            .query_together(vec![
                bookings_read(customer, after, limit),
                booking_counts_read(customer),
            ])
            .await?
            .try_into()
            .map_err(|_| corrupt("number of answers to the bookings reads"))?;
        Ok((bookings_of(page)?, booking_counts_of(counts)?))
    }

    async fn event_sales(&self, event: EventId) -> Result<Option<EventSales>, LedgerError> {
        type Head = (String, String, String);
        type Seats = (Option<String>, Option<String>, i64, i64, i64, i64, i64, i64);
        type Kinds = (Option<String>, Option<String>, String, i64);
        type Revenue = (Option<String>, Option<String>, i64);
        let id = Val::Uuid(event.as_uuid());
        // One snapshot: a projector batch committed between two of these reads would pair the
        // seats' states before it with the history after it (booked, yet still available).
        let answers: [Vec<Vec<Val>>; 4] = self
            .query_together(vec![
                read_of::<Head>(
                    "SELECT title, organizer, currency FROM events WHERE event_id = $1",
                    vec![id.clone()],
                ),
                read_of::<Seats>(
                    "SELECT section, tier, COUNT(*),
                    CAST(SUM(CASE WHEN state = 'available' THEN 1 ELSE 0 END) AS BIGINT),
                    CAST(SUM(CASE WHEN state = 'held' THEN 1 ELSE 0 END) AS BIGINT),
                    CAST(SUM(CASE WHEN state = 'booked' THEN 1 ELSE 0 END) AS BIGINT),
                    CAST(SUM(CASE WHEN state = 'booked' THEN price ELSE 0 END) AS BIGINT),
                    CAST(SUM(CASE WHEN state = 'withheld' THEN 1 ELSE 0 END) AS BIGINT)
                     FROM seats WHERE event_id = $1 GROUP BY section, tier",
                    vec![id.clone()],
                ),
                read_of::<Kinds>(
                    "SELECT section, tier, kind, COUNT(*) FROM seat_history WHERE event_id = $1
                     GROUP BY section, tier, kind",
                    vec![id.clone()],
                ),
                read_of::<Revenue>(
                    "SELECT section, tier, CAST(SUM(amount) AS BIGINT) FROM money_entries
                     WHERE event_id = $1 AND account = 'event_revenue' GROUP BY section, tier",
                    vec![id],
                ),
            ])
            .await?
            .try_into()
            .map_err(|_| corrupt("number of answers to the sales reads"))?;
        let [head, seats, history, revenue] = answers;
        let Some((title, organizer, currency)) = rows_as::<Head>(head)?.into_iter().next() else {
            return Ok(None);
        };
        type Key = (Option<String>, Option<String>);
        let mut lines: BTreeMap<Key, SalesLine> = BTreeMap::new();
        let seats: Vec<Seats> = rows_as(seats)?;
        for (section, tier, count, available, held, booked, booked_value, withheld) in seats {
            let line = lines.entry((section, tier)).or_default();
            line.seats = count;
            line.available_now = available;
            line.held_now = held;
            line.booked_now = booked;
            line.booked_value = booked_value;
            line.withheld_now = withheld;
        }
        for (section, tier, kind, n) in rows_as::<Kinds>(history)? {
            let line = lines.entry((section, tier)).or_default();
            match kind.as_str() {
                "held" => line.held = n,
                "booked" => line.booked = n,
                "expired" => line.expired = n,
                "released" => line.released = n,
                "payment_failed" => line.payment_failed = n,
                "refunded" => line.refunded = n,
                // Organizer holds: the seats' state says what is withheld now.
                "withheld" | "returned" => {}
                other => return Err(corrupt(&format!("seat history kind {other:?}"))),
            }
        }
        for (section, tier, amount) in rows_as::<Revenue>(revenue)? {
            lines.entry((section, tier)).or_default().revenue = amount;
        }
        let mut total = SalesLine::default();
        let lines: Vec<SalesLine> = lines
            .into_iter()
            .map(|((section, tier), mut line)| {
                line.section = section;
                line.tier = tier;
                total.seats += line.seats;
                total.available_now += line.available_now;
                total.held_now += line.held_now;
                total.booked_now += line.booked_now;
                total.withheld_now += line.withheld_now;
                total.held += line.held;
                total.booked += line.booked;
                total.expired += line.expired;
                total.released += line.released;
                total.payment_failed += line.payment_failed;
                total.refunded += line.refunded;
                total.revenue = total.revenue.saturating_add(line.revenue);
                total.booked_value = total.booked_value.saturating_add(line.booked_value);
                line
            })
            .collect();
        Ok(Some(EventSales {
            event_id: event.as_uuid(),
            title,
            organizer,
            currency,
            total,
            lines,
        }))
    }

    async fn seat_history(&self, event: EventId, seat: &SeatId) -> Result<Option<SeatHistory>, LedgerError> {
        type Head = (String, String, i64, String);
        type Entry = (i64, String, Option<Uuid>, Time);
        let params = vec![Val::Uuid(event.as_uuid()), Val::Text(seat.to_string())];
        // One snapshot: the seat's state and its history as of the same batch.
        let answers: [Vec<Vec<Val>>; 2] = self
            .query_together(vec![
                read_of::<Head>(
                    "SELECT section, tier, price, state FROM seats WHERE event_id = $1 AND seat = $2",
                    params.clone(),
                ),
                read_of::<Entry>(
                    "SELECT sequence, kind, reservation_id, at FROM seat_history
                     WHERE event_id = $1 AND seat = $2 ORDER BY sequence",
                    params,
                ),
            ])
            .await?
            .try_into()
            .map_err(|_| corrupt("number of answers to the seat history reads"))?;
        let [head, rows] = answers;
        let Some((section, tier, price, state)) = rows_as::<Head>(head)?.into_iter().next() else {
            return Ok(None);
        };
        let rows: Vec<Entry> = rows_as(rows)?;
        let history = rows
            .into_iter()
            .map(|(sequence, kind, reservation_id, at)| SeatHistoryEntry {
                sequence,
                kind,
                reservation_id,
                at,
            })
            .collect();
        Ok(Some(SeatHistory {
            event_id: event.as_uuid(),
            seat: seat.to_string(),
            section,
            tier,
            price,
            state,
            history,
        }))
    }

    async fn audit(&self) -> Result<Vec<EventAudit>, LedgerError> {
        let mut by: BTreeMap<Uuid, EventAudit> = BTreeMap::new();
        let events: Vec<(Uuid,)> = query_as(self, "SELECT event_id FROM events", vec![]).await?;
        for (event_id,) in events {
            by.insert(
                event_id,
                EventAudit {
                    event_id,
                    ..EventAudit::default()
                },
            );
        }
        let booked: Vec<(Uuid, i64)> = query_as(
            self,
            "SELECT event_id, CAST(SUM(amount) AS BIGINT) FROM bookings GROUP BY event_id",
            vec![],
        )
        .await?;
        for (id, amount) in booked {
            by.entry(id).or_default().bookings = amount;
        }
        let refunded: Vec<(Uuid, i64, i64)> = query_as(
            self,
            "SELECT event_id, CAST(SUM(amount) AS BIGINT),
                    CAST(SUM(CASE WHEN reason = 'booking_cancelled' THEN amount ELSE 0 END) AS BIGINT)
             FROM refunds GROUP BY event_id",
            vec![],
        )
        .await?;
        for (id, refunds, cancelled) in refunded {
            let a = by.entry(id).or_default();
            a.refunds = refunds;
            a.cancelled = cancelled;
        }
        let accounts: Vec<(Uuid, String, i64)> = query_as(
            self,
            "SELECT event_id, account, CAST(SUM(amount) AS BIGINT) FROM money_entries GROUP BY event_id, account",
            vec![],
        )
        .await?;
        for (id, account, n) in accounts {
            let a = by.entry(id).or_default();
            a.balance += n;
            match account.as_str() {
                "event_revenue" => a.revenue = n,
                "refunds_payable" => a.refunds_payable = n,
                _ => {}
            }
        }
        let unbalanced: Vec<(Uuid, i64)> = query_as(
            self,
            "SELECT event_id, COUNT(*) FROM (
                 SELECT event_id, txn_id FROM money_entries GROUP BY event_id, txn_id HAVING SUM(amount) <> 0
             ) unbalanced GROUP BY event_id",
            vec![],
        )
        .await?;
        for (id, n) in unbalanced {
            by.entry(id).or_default().unbalanced_transactions = n;
        }
        let unpaid: Vec<(Uuid, i64)> = query_as(
            self,
            "SELECT b.event_id, COUNT(*) FROM bookings b
             WHERE (SELECT COUNT(*) FROM payments p WHERE p.reservation_id = b.reservation_id
                    AND (p.status = 'booked' OR p.provider_event_id = b.provider_event_id)) <> 1
             GROUP BY b.event_id",
            vec![],
        )
        .await?;
        for (id, n) in unpaid {
            by.entry(id).or_default().bookings_without_one_payment = n;
        }
        Ok(by
            .into_iter()
            .map(|(id, mut a)| {
                a.event_id = id;
                a
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_reads_as_its_tuple_and_a_wrong_type_is_corrupt() {
        let id = Uuid::from_u128(7);
        let row = vec![Val::Uuid(id), Val::Null, Val::Int(1), Val::Text("a".into())];
        let read = <(Uuid, Option<i64>, bool, String)>::from_row(row).expect("a well-typed row");
        assert_eq!(read, (id, None, true, "a".to_owned()));

        let wrong = <(Uuid, i64)>::from_row(vec![Val::Uuid(id), Val::Text("3".into())]);
        assert!(matches!(wrong, Err(LedgerError::Corrupt(m)) if m.contains("column 1")));
        let null = <(i64,)>::from_row(vec![Val::Null]);
        assert!(matches!(null, Err(LedgerError::Corrupt(_))), "a NULL is not an i64");
        let short = <(i64, i64)>::from_row(vec![Val::Int(1)]);
        assert!(matches!(short, Err(LedgerError::Corrupt(m)) if m.contains("short")));
    }
}

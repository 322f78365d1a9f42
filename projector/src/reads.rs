//! The ledger's reads, written once over [`Ledger::query`] for both dialects.

use std::collections::BTreeMap;

use async_trait::async_trait;
use frontrow_schema::{CustomerId, EventId, SeatId};
use uuid::Uuid;

use crate::LedgerError;
use crate::ledger::*;
use crate::rows::{Ty, Val};

fn corrupt(what: &str) -> LedgerError {
    LedgerError::Corrupt(format!("unexpected {what}"))
}

fn uuid(v: &Val) -> Result<Uuid, LedgerError> {
    v.as_uuid().ok_or_else(|| corrupt("non-uuid"))
}
fn text(v: &Val) -> Result<String, LedgerError> {
    v.as_str().map(str::to_owned).ok_or_else(|| corrupt("non-text"))
}
fn opt_text(v: &Val) -> Option<String> {
    v.as_str().map(str::to_owned)
}
fn int(v: &Val) -> i64 {
    v.as_int().unwrap_or(0)
}

#[async_trait]
impl<L: Ledger + ?Sized> LedgerReads for L {
    async fn customer_bookings(&self, customer: &CustomerId) -> Result<Vec<CustomerBooking>, LedgerError> {
        let rows = self
            .query(
                "SELECT b.reservation_id, b.event_id, e.title, e.venue, e.starts_at, b.seats, b.amount,
                        b.currency, b.late, b.booked_at, b.cancelled_at
                 FROM bookings b JOIN events e ON e.event_id = b.event_id
                 WHERE b.customer = $1
                 ORDER BY b.booked_at DESC, b.reservation_id",
                vec![customer.as_str().into()],
                &[
                    Ty::Uuid,
                    Ty::Uuid,
                    Ty::Text,
                    Ty::Text,
                    Ty::Time,
                    Ty::Text,
                    Ty::Int,
                    Ty::Text,
                    Ty::Bool,
                    Ty::Time,
                    Ty::Time,
                ],
            )
            .await?;
        rows.iter()
            .map(|r| {
                let cancelled_at = r[10].as_time();
                Ok(CustomerBooking {
                    reservation_id: uuid(&r[0])?,
                    event_id: uuid(&r[1])?,
                    title: text(&r[2])?,
                    venue: text(&r[3])?,
                    starts_at: r[4].as_time().ok_or_else(|| corrupt("starts_at"))?,
                    seats: text(&r[5])?.split(',').map(str::to_owned).collect(),
                    amount: int(&r[6]),
                    currency: text(&r[7])?,
                    late: r[8].as_bool().unwrap_or(false),
                    booked_at: r[9].as_time().ok_or_else(|| corrupt("booked_at"))?,
                    status: if cancelled_at.is_some() {
                        BookingStatus::Cancelled
                    } else {
                        BookingStatus::Booked
                    },
                    cancelled_at,
                })
            })
            .collect()
    }

    async fn event_sales(&self, event: EventId) -> Result<Option<EventSales>, LedgerError> {
        let id = Val::Uuid(event.as_uuid());
        let head = self
            .query(
                "SELECT title, organizer, currency FROM events WHERE event_id = $1",
                vec![id.clone()],
                &[Ty::Text, Ty::Text, Ty::Text],
            )
            .await?;
        let Some(head) = head.first() else {
            return Ok(None);
        };
        type Key = (Option<String>, Option<String>);
        let mut lines: BTreeMap<Key, SalesLine> = BTreeMap::new();
        let seats = self
            .query(
                "SELECT section, tier, COUNT(*),
                        CAST(SUM(CASE WHEN state = 'available' THEN 1 ELSE 0 END) AS BIGINT),
                        CAST(SUM(CASE WHEN state = 'held' THEN 1 ELSE 0 END) AS BIGINT),
                        CAST(SUM(CASE WHEN state = 'booked' THEN 1 ELSE 0 END) AS BIGINT),
                        CAST(SUM(CASE WHEN state = 'booked' THEN price ELSE 0 END) AS BIGINT),
                        CAST(SUM(CASE WHEN state = 'withheld' THEN 1 ELSE 0 END) AS BIGINT)
                 FROM seats WHERE event_id = $1 GROUP BY section, tier",
                vec![id.clone()],
                &[Ty::Text, Ty::Text, Ty::Int, Ty::Int, Ty::Int, Ty::Int, Ty::Int, Ty::Int],
            )
            .await?;
        for r in &seats {
            let line = lines.entry((opt_text(&r[0]), opt_text(&r[1]))).or_default();
            line.seats = int(&r[2]);
            line.available_now = int(&r[3]);
            line.held_now = int(&r[4]);
            line.booked_now = int(&r[5]);
            line.booked_value = int(&r[6]);
            line.withheld_now = int(&r[7]);
        }
        let history = self
            .query(
                "SELECT section, tier, kind, COUNT(*) FROM seat_history WHERE event_id = $1
                 GROUP BY section, tier, kind",
                vec![id.clone()],
                &[Ty::Text, Ty::Text, Ty::Text, Ty::Int],
            )
            .await?;
        for r in &history {
            let line = lines.entry((opt_text(&r[0]), opt_text(&r[1]))).or_default();
            let n = int(&r[3]);
            match r[2].as_str().unwrap_or_default() {
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
        let revenue = self
            .query(
                "SELECT section, tier, CAST(SUM(amount) AS BIGINT) FROM money_entries
                 WHERE event_id = $1 AND account = 'event_revenue' GROUP BY section, tier",
                vec![id],
                &[Ty::Text, Ty::Text, Ty::Int],
            )
            .await?;
        for r in &revenue {
            lines.entry((opt_text(&r[0]), opt_text(&r[1]))).or_default().revenue = int(&r[2]);
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
            title: text(&head[0])?,
            organizer: text(&head[1])?,
            currency: text(&head[2])?,
            total,
            lines,
        }))
    }

    async fn seat_history(&self, event: EventId, seat: &SeatId) -> Result<Option<SeatHistory>, LedgerError> {
        let params = vec![Val::Uuid(event.as_uuid()), Val::Text(seat.to_string())];
        let head = self
            .query(
                "SELECT section, tier, price, state FROM seats WHERE event_id = $1 AND seat = $2",
                params.clone(),
                &[Ty::Text, Ty::Text, Ty::Int, Ty::Text],
            )
            .await?;
        let Some(head) = head.first() else {
            return Ok(None);
        };
        let rows = self
            .query(
                "SELECT sequence, kind, reservation_id, at FROM seat_history
                 WHERE event_id = $1 AND seat = $2 ORDER BY sequence",
                params,
                &[Ty::Int, Ty::Text, Ty::Uuid, Ty::Time],
            )
            .await?;
        let history = rows
            .iter()
            .map(|r| {
                Ok(SeatHistoryEntry {
                    sequence: int(&r[0]),
                    kind: text(&r[1])?,
                    reservation_id: r[2].as_uuid(),
                    at: r[3].as_time().ok_or_else(|| corrupt("time"))?,
                })
            })
            .collect::<Result<_, LedgerError>>()?;
        Ok(Some(SeatHistory {
            event_id: event.as_uuid(),
            seat: seat.to_string(),
            section: text(&head[0])?,
            tier: text(&head[1])?,
            price: int(&head[2]),
            state: text(&head[3])?,
            history,
        }))
    }

    async fn audit(&self) -> Result<Vec<EventAudit>, LedgerError> {
        let mut by: BTreeMap<Uuid, EventAudit> = BTreeMap::new();
        for r in self.query("SELECT event_id FROM events", vec![], &[Ty::Uuid]).await? {
            let id = uuid(&r[0])?;
            by.insert(
                id,
                EventAudit {
                    event_id: id,
                    ..EventAudit::default()
                },
            );
        }
        let q = |sql: &'static str, types: &'static [Ty]| self.query(sql, vec![], types);
        for r in q(
            "SELECT event_id, CAST(SUM(amount) AS BIGINT) FROM bookings GROUP BY event_id",
            &[Ty::Uuid, Ty::Int],
        )
        .await?
        {
            by.entry(uuid(&r[0])?).or_default().bookings = int(&r[1]);
        }
        for r in q(
            "SELECT event_id, CAST(SUM(amount) AS BIGINT),
                    CAST(SUM(CASE WHEN reason = 'booking_cancelled' THEN amount ELSE 0 END) AS BIGINT)
             FROM refunds GROUP BY event_id",
            &[Ty::Uuid, Ty::Int, Ty::Int],
        )
        .await?
        {
            let a = by.entry(uuid(&r[0])?).or_default();
            a.refunds = int(&r[1]);
            a.cancelled = int(&r[2]);
        }
        for r in q(
            "SELECT event_id, account, CAST(SUM(amount) AS BIGINT) FROM money_entries GROUP BY event_id, account",
            &[Ty::Uuid, Ty::Text, Ty::Int],
        )
        .await?
        {
            let a = by.entry(uuid(&r[0])?).or_default();
            let n = int(&r[2]);
            a.balance += n;
            match r[1].as_str().unwrap_or_default() {
                "event_revenue" => a.revenue = n,
                "refunds_payable" => a.refunds_payable = n,
                _ => {}
            }
        }
        for r in q(
            "SELECT event_id, COUNT(*) FROM (
                 SELECT event_id, txn_id FROM money_entries GROUP BY event_id, txn_id HAVING SUM(amount) <> 0
             ) unbalanced GROUP BY event_id",
            &[Ty::Uuid, Ty::Int],
        )
        .await?
        {
            by.entry(uuid(&r[0])?).or_default().unbalanced_transactions = int(&r[1]);
        }
        for r in q(
            "SELECT b.event_id, COUNT(*) FROM bookings b
             WHERE (SELECT COUNT(*) FROM payments p WHERE p.reservation_id = b.reservation_id
                    AND (p.status = 'booked' OR p.provider_event_id = b.provider_event_id)) <> 1
             GROUP BY b.event_id",
            &[Ty::Uuid, Ty::Int],
        )
        .await?
        {
            by.entry(uuid(&r[0])?).or_default().bookings_without_one_payment = int(&r[1]);
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

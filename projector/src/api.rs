//! The ledger's read API: a customer's bookings and an event's sales.
//!
//! These are served from the ledger, so they lag the journal by the projector's last batch (and,
//! while the journal keeps growing, by up to its pace: [`crate::Projector::pacing`]). A client
//! that has just written reads its write with `?after=` the command's position: the answer waits
//! until the ledger has applied it (see [`frontrow_http::read_after`]).
//! Sales belong to the event's organizer (`X-Api-Key`). A seat's history
//! (`/events/{event_id}/seats/{seat}/history`) is served from the log by the query role
//! (`frontrow_analytics::api`); the ledger keeps its `seat_history` table for its own reports
//! and for checking the two agree ([`LedgerReads::seat_history`]).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use frontrow_http::auth::{Customer, Organizer};
use frontrow_http::read_after::{ReadAfter, not_visible};
use frontrow_http::{ApiPath, ApiQuery, Problem, page};
use frontrow_schema::{EventId, OrganizerId};
use serde::Deserialize;
use utoipa::{IntoParams, OpenApi};

use crate::ledger::{
    BookingCursor, BookingStatus, CustomerBooking, CustomerBookings, EventSales, Ledger, LedgerReads, SalesLine,
    booking_cursor,
};
use crate::rows::{Ty, Val};

/// The ledger API's OpenAPI description.
#[derive(OpenApi)]
#[openapi(
    paths(my_bookings, event_sales),
    components(schemas(CustomerBookings, CustomerBooking, BookingStatus, EventSales, SalesLine, Problem)),
    tags((name = "ledger", description = "Bookings and sales from the ledger"))
)]
pub struct LedgerApi;

/// The ledger's read API over `ledger`, which projects a journal of `partitions` partitions.
/// Needs the `Auth` extension layer of the app.
pub fn router(ledger: Arc<dyn Ledger>, partitions: u32) -> Router {
    Router::new()
        .route("/me/bookings", get(my_bookings))
        .route("/events/{event_id}/sales", get(event_sales))
        .with_state(Reads { ledger, partitions })
}

#[derive(Clone)]
struct Reads {
    ledger: Arc<dyn Ledger>,
    partitions: u32,
}

/// The longest pause between two looks at the ledger's positions while a read waits.
const MAX_LOOK_EVERY: Duration = Duration::from_millis(200);

impl Reads {
    /// Waits until the ledger has applied `read`'s position, if it names one. The ledger may be
    /// written by another process, so its stored positions are read again: after 10 ms, then
    /// twice as long each time up to [`MAX_LOOK_EVERY`] (a 10 s wait looks about 55 times).
    async fn wait(&self, read: &ReadAfter) -> Result<(), Problem> {
        let Some((position, wait)) = read.target(self.partitions)? else {
            return Ok(());
        };
        let deadline = tokio::time::Instant::now() + wait;
        let mut pause = Duration::from_millis(10);
        loop {
            let applied = self.ledger.positions().await.map_err(Problem::internal)?;
            // A stored position is the next offset to apply.
            if applied
                .get(&position.partition)
                .is_some_and(|&next| next > position.offset)
            {
                return Ok(());
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Err(not_visible(position, "the ledger"));
            }
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(MAX_LOOK_EVERY);
        }
    }
}

/// Whether `organizer` may read `event`: `404` when the ledger has no such event, `403` when
/// it is someone else's.
async fn owned(ledger: &dyn Ledger, event: EventId, organizer: &OrganizerId) -> Result<(), Problem> {
    let rows = ledger
        .query(
            "SELECT organizer FROM events WHERE event_id = $1",
            vec![Val::Uuid(event.as_uuid())],
            &[Ty::Text],
        )
        .await
        .map_err(Problem::internal)?;
    match rows.first().and_then(|r| r[0].as_str()) {
        None => Err(Problem::not_found(format!("the ledger has no event {event}"))),
        Some(owner) if owner == organizer.as_str() => Ok(()),
        Some(_) => Err(Problem::forbidden("this event belongs to another organizer")),
    }
}

frontrow_http::problems! {
    /// What reading one's bookings refuses with.
    BookingsProblems = [CUSTOMER_TOKEN, READ_AFTER, &[
        Cause::new(400, "`bad-limit`: `limit` is not a whole number from 1 to 100; `bad-cursor`: `cursor` is not a `next` this API gave"),
    ]];
    /// What reading an event's sales refuses with.
    SalesProblems = [ORGANIZER_KEY, OTHER_ORGANIZER,
        &[Cause::new(404, "`not-found`: no such event in the ledger (it may not have caught up yet), or a path id that does not parse")], READ_AFTER];
}

/// Bookings on a page when the client does not say, and at most.
const BOOKINGS_PAGE: usize = 20;
const MAX_BOOKINGS_PAGE: usize = 100;

/// Which page of one's bookings to read.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct BookingsQuery {
    /// Bookings on the page, 1 to 100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// The `next` of the page before (opaque); without it, the newest bookings.
    #[param(example = "1796126400000000.0192f5c1a3e47d2b9c1e5f3a7b8d9e01")]
    cursor: Option<String>,
}

impl BookingsQuery {
    /// The page's cursor and size; a `400` (`bad-limit`, `bad-cursor`) for what does not parse.
    fn page(&self) -> Result<(Option<BookingCursor>, usize), Problem> {
        let limit = page::limit(self.limit.as_deref(), BOOKINGS_PAGE, MAX_BOOKINGS_PAGE)?;
        Ok((page::cursor(self.cursor.as_deref(), "bookings")?, limit))
    }
}

/// The calling customer's bookings, newest first, including cancelled ones: a page at a time
/// (`limit`, 20 by default), the next one at `?cursor=` the answer's `next`.
#[utoipa::path(
    get, path = "/me/bookings", tag = "ledger",
    params(ReadAfter, BookingsQuery),
    security(("customer_token" = [])),
    responses(
        (status = 200, description = "The customer's bookings", body = CustomerBookings),
        BookingsProblems,
    )
)]
#[tracing::instrument(level = "debug", skip_all)]
async fn my_bookings(
    State(reads): State<Reads>,
    Customer(customer): Customer,
    ApiQuery(read): ApiQuery<ReadAfter>,
    ApiQuery(page): ApiQuery<BookingsQuery>,
) -> Result<Json<CustomerBookings>, Problem> {
    let (cursor, limit) = page.page()?;
    reads.wait(&read).await?;
    let ledger = reads.ledger.as_ref();
    // One more than the page holds says whether there is a next page.
    let (mut bookings, (booked_count, cancelled_count)) = ledger
        .customer_bookings_and_counts(&customer, cursor, limit + 1)
        .await
        .map_err(Problem::internal)?;
    let more = bookings.len() > limit;
    bookings.truncate(limit);
    let next = bookings.last().filter(|_| more).map(|b| booking_cursor(b).to_string());
    Ok(Json(CustomerBookings {
        customer: customer.to_string(),
        bookings,
        booked_count,
        cancelled_count,
        next,
    }))
}

/// An event's sales by section and price tier: seats now, holds, bookings, expiries,
/// releases, refunds and revenue.
#[utoipa::path(
    get, path = "/events/{event_id}/sales", tag = "ledger",
    params(("event_id" = EventId, Path, description = "The event"), ReadAfter),
    security(("organizer_key" = [])),
    responses(
        (status = 200, description = "The event's sales", body = EventSales),
        SalesProblems,
    )
)]
#[tracing::instrument(level = "debug", skip_all, fields(%event_id))]
async fn event_sales(
    State(reads): State<Reads>,
    ApiPath(event_id): ApiPath<EventId>,
    Organizer(organizer): Organizer,
    ApiQuery(read): ApiQuery<ReadAfter>,
) -> Result<Json<EventSales>, Problem> {
    reads.wait(&read).await?;
    let ledger = reads.ledger.as_ref();
    owned(ledger, event_id, &organizer).await?;
    ledger
        .event_sales(event_id)
        .await
        .map_err(Problem::internal)?
        .map(Json)
        .ok_or_else(|| Problem::not_found(format!("the ledger has no event {event_id}")))
}

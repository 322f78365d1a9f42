//! A seat's history over HTTP, read from the log: `GET /events/{event_id}/seats/{seat}/history`.
//!
//! Served by the query role (it holds a journal handle), so the answer is as fresh as the log:
//! everything durable when the request arrived. It belongs to the event's organizer
//! (`X-Api-Key`): a seat's history names the reservations that held it, which is support data,
//! not something to publish. The organizer is the one the log's `EventScheduled` names.
//!
//! Each request replays the event's partition (decoding only the event's records), so only a
//! few run at once per node; more get `503 overloaded` with `Retry-After`.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use frontrow_http::auth::Organizer;
use frontrow_http::{ApiPath, Problem};
use frontrow_journal::Journal;
use frontrow_projector::{SeatHistory, SeatHistoryEntry};
use frontrow_query::replays::{Replayer, replay_permit_or_overloaded};
use frontrow_schema::{EventId, SeatId};
use utoipa::OpenApi;

use crate::history::seat_history_with_organizer;

/// The seat-history API's OpenAPI description.
#[derive(OpenApi)]
#[openapi(
    paths(seat_history),
    components(schemas(SeatHistory, SeatHistoryEntry, Problem)),
    tags((name = "history", description = "A seat's history, read from the event log"))
)]
pub struct SeatHistoryApi;

/// The seat-history route over `journal`. Needs the `Auth` extension layer of the app.
pub fn router(journal: Arc<dyn Journal>) -> Router {
    Router::new()
        .route("/events/{event_id}/seats/{seat}/history", get(seat_history))
        .with_state(journal)
}

frontrow_http::problems! {
    /// What a seat's history refuses with.
    HistoryProblems = [ORGANIZER_KEY, OTHER_ORGANIZER,
        &[Cause::new(404, "`not-found`: no such event in the log, no such seat in its map, or a path id that does not parse"),
          Cause::new(503, "`overloaded`: this node already runs its two log replays (past maps and histories \
              share them); retry after `Retry-After` seconds")]];
}

/// Everything that happened to one seat: every hold, expiry, release, booking and refund,
/// with times and reservation ids, read from the event log.
#[utoipa::path(
    get, path = "/events/{event_id}/seats/{seat}/history", tag = "history",
    params(
        ("event_id" = EventId, Path, description = "The event"),
        ("seat" = SeatId, Path, description = "SECTION-ROW-NUMBER"),
    ),
    security(("organizer_key" = [])),
    responses(
        (status = 200, description = "The seat's history", body = SeatHistory),
        HistoryProblems,
    )
)]
#[tracing::instrument(level = "debug", skip_all, fields(%event_id, %seat))]
async fn seat_history(
    State(journal): State<Arc<dyn Journal>>,
    ApiPath((event_id, seat)): ApiPath<(EventId, SeatId)>,
    Organizer(organizer): Organizer,
) -> Result<Json<SeatHistory>, Problem> {
    // Organizers' seat histories have places of their own among the node's request-time
    // replays: anonymous past maps and stream resumes cannot take them all.
    let _permit = replay_permit_or_overloaded(Replayer::Organizer)?;
    let Some((owner, history)) = seat_history_with_organizer(journal.as_ref(), event_id, &seat)
        .await
        .map_err(Problem::internal)?
    else {
        return Err(Problem::not_found(format!("the log has no event {event_id}")));
    };
    if owner != organizer {
        return Err(Problem::forbidden("this event belongs to another organizer"));
    }
    history
        .map(Json)
        .ok_or_else(|| Problem::not_found(format!("event {event_id} has no seat {seat}")))
}

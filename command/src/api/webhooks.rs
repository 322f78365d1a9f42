//! The payment provider's webhook.
//!
//! A delivery is verified (signature and timestamp) on its raw bytes before anything is parsed.
//! The provider event id is then applied at most once, forever: it is recorded in the log with
//! the booking, refund or failure it caused, and a repeated delivery answers `duplicate`.

use std::borrow::Cow;
use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use frontrow_http::{ApiBytes, Problem};
use frontrow_schema::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{CommandState, send_command};
use crate::domain::Command;
use crate::payments::{self, ProviderEvent};

/// What FrontRow did with a delivery.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookAnswer {
    pub received: bool,
    /// `booked`, `refunded`, `payment_failed`, `duplicate` (already applied) or `ignored`
    /// (an event type FrontRow does not act on).
    #[schema(value_type = String, example = "booked")]
    pub outcome: Cow<'static, str>,
    /// The reservation's status after this delivery.
    #[schema(value_type = Option<String>)]
    pub reservation_status: Option<Cow<'static, str>>,
    /// Log position (`partition:offset`) of what this delivery recorded, or for a duplicate the
    /// newest durable one of the event's partition: `?after=` on `/me/bookings` shows the
    /// booking. Absent for an ignored event type.
    pub position: Option<String>,
}

frontrow_http::problems! {
    /// What the webhook refuses with. Nothing is parsed before the signature is checked.
    WebhookProblems = [RATE_LIMITED, WRITER_BUSY,
        &[Cause::new(400, "`bad-signature` (missing, malformed, stale or wrong `Stripe-Signature`) or \
              `malformed-webhook` (a signed body that is not a provider event)"),
          Cause::new(404, "`event-not-found` / `reservation-not-found`: the metadata names no known reservation"),
          Cause::new(413, "`body-too-large`: the body is larger than the server accepts (`max_body_bytes`)"),
          Cause::new(422, "`bad-payment-metadata`, `bad-provider-ids` or `bad-currency`")]];
}

/// Payment provider webhook (Stripe-style signed deliveries).
#[utoipa::path(
    post, path = "/webhooks/payments", tag = "payments",
    request_body = ProviderEvent,
    params(("Stripe-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"t.body\">")),
    responses(
        (status = 200, description = "applied, or applied before (`duplicate`)", body = WebhookAnswer),
        WebhookProblems
    )
)]
pub(super) async fn payment_webhook(
    State(state): State<Arc<CommandState>>,
    headers: HeaderMap,
    ApiBytes(body): ApiBytes,
) -> Result<axum::Json<WebhookAnswer>, Problem> {
    let signature = headers.get("stripe-signature").and_then(|v| v.to_str().ok());
    payments::verify(
        &state.webhook_secret,
        signature,
        &body,
        state.clock.now(),
        state.webhook_tolerance_secs,
    )
    .map_err(|e| Problem::bad_request("bad-signature", e.to_string()))?;
    let event: ProviderEvent = frontrow_http::strict::from_slice_strict(&body)
        .map_err(|e| Problem::bad_request("malformed-webhook", format!("not a provider event: {e}")))?;
    let intent = &event.data.object;
    let succeeded = match event.kind.as_str() {
        "payment_intent.succeeded" => true,
        "payment_intent.payment_failed" => false,
        other => {
            tracing::debug!(kind = other, id = %event.id, "webhook event type ignored");
            return Ok(axum::Json(WebhookAnswer {
                received: true,
                outcome: "ignored".into(),
                reservation_status: None,
                position: None,
            }));
        }
    };
    let bad =
        |what: &str| Problem::unprocessable("bad-payment-metadata", format!("metadata.{what} is missing or invalid"));
    let event_id: EventId = intent.metadata.event_id.parse().map_err(|_| bad("event_id"))?;
    let reservation_id: ReservationId = intent
        .metadata
        .reservation_id
        .parse()
        .map_err(|_| bad("reservation_id"))?;
    if event.id.is_empty() || event.id.len() > 255 || intent.id.is_empty() || intent.id.len() > 255 {
        return Err(Problem::unprocessable(
            "bad-provider-ids",
            "the event and payment intent ids must be 1 to 255 characters",
        ));
    }
    let command = if succeeded {
        let currency = Currency::parse(&intent.currency.to_ascii_uppercase())
            .map_err(|e| Problem::unprocessable("bad-currency", e.to_string()))?;
        Command::PaymentSucceeded {
            reservation_id,
            payment: Payment {
                provider_event_id: event.id.clone(),
                payment_intent: intent.id.clone(),
                amount: Money {
                    amount: intent.amount,
                    currency,
                },
            },
        }
    } else {
        Command::PaymentFailed {
            reservation_id,
            provider_event_id: event.id.clone(),
            payment_intent: intent.id.clone(),
            message: intent.last_payment_error.as_ref().and_then(|e| e.message.clone()),
        }
    };
    let outcome = send_command(&state, event_id, command, &headers, Some(event.id.clone())).await?;
    let kinds = &outcome.recorded;
    let answer = if kinds.contains(&EventKind::SeatsBooked) {
        "booked"
    } else if kinds.contains(&EventKind::PaymentRefunded) {
        "refunded"
    } else if kinds.contains(&EventKind::PaymentFailed) {
        "payment_failed"
    } else {
        "duplicate"
    };
    tracing::info!(provider_event = %event.id, %reservation_id, outcome = answer, "payment webhook applied");
    Ok(axum::Json(WebhookAnswer {
        received: true,
        outcome: answer.into(),
        reservation_status: outcome.reservation.map(|r| r.status),
        position: outcome.position.map(|p| p.to_string()),
    }))
}

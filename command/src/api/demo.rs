//! Demo-only routes: mint customer tokens and pay through the simulated provider.
//!
//! Mounted only when demo mode is on (the default for `frontrow serve` on embedded defaults), so
//! a newcomer can walk the whole flow with curl. A production deployment turns demo mode off
//! and gets its tokens from its identity provider and its webhooks from the real provider.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use frontrow_http::auth::Customer;
use frontrow_http::{ApiJson, Problem};
use frontrow_schema::*;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{CommandErrorProblem, CommandState, idempotency_key};
use crate::payments::Simulator;
use crate::writer::Request;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DemoTokenRequest {
    #[schema(value_type = String, example = "alice")]
    pub customer: CustomerId,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DemoToken {
    pub token: String,
    pub expires_at: DateTime<Utc>,
}

frontrow_http::problems! {
    /// What minting a demo token refuses with.
    TokenProblems = [JSON_BODY, RATE_LIMITED];
    /// What a demo payment refuses with: its own checks, then whatever the webhook answered.
    PayProblems = [CUSTOMER_TOKEN, JSON_BODY, IDEMPOTENCY_KEY, RATE_LIMITED, WRITER_BUSY,
        &[Cause::new(400, "the webhook's `bad-signature` or `malformed-webhook` (never for a delivery the demo signs)"),
          Cause::new(404, "`event-not-found` / `reservation-not-found`: no such reservation of the caller's"),
          Cause::new(422, "`bad-outcome` (`outcome` is `succeeded` or `failed`), or the webhook's refusal"),
          Cause::new(409, "the webhook's refusal of the payment (e.g. `sales-closed`)")]];
}

/// Demo mode: a customer token for any customer id.
#[utoipa::path(
    post, path = "/demo/tokens", tag = "demo",
    request_body = DemoTokenRequest,
    responses((status = 200, description = "a customer token", body = DemoToken), TokenProblems)
)]
pub(super) async fn mint_token(
    State(state): State<Arc<CommandState>>,
    ApiJson(body): ApiJson<DemoTokenRequest>,
) -> Result<axum::Json<DemoToken>, Problem> {
    let demo = state
        .demo
        .as_ref()
        .ok_or_else(|| Problem::not_found("demo mode is off"))?;
    let now = Utc::now();
    let expires_at = now + demo.token_ttl;
    Ok(axum::Json(DemoToken {
        token: demo.auth.mint(&body.customer, now, expires_at),
        expires_at,
    }))
}

/// A simulated payment attempt for one of the caller's reservations.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DemoPayment {
    pub event_id: EventId,
    pub reservation_id: ReservationId,
    /// `succeeded` (default) or `failed`.
    #[serde(default = "succeeded")]
    #[schema(example = "succeeded")]
    pub outcome: String,
}

fn succeeded() -> String {
    "succeeded".into()
}

/// Namespace for the provider ids of a keyed demo payment.
const PAYMENT_ID_NAMESPACE: Uuid = Uuid::from_u128(0x2d7e_91c4_5b3a_4f08_a6e1_7c92_0b5d_3e18);

/// Demo mode: the simulated provider charges the reservation's amount and delivers a signed
/// webhook to this server; the answer is the webhook's. With an `Idempotency-Key`, a retry of
/// the same payment (same customer, key and body) delivers the same provider event, which the
/// webhook answers `duplicate` with the reservation's status; without one every call is a new
/// charge (a second one for a booked reservation is refunded as a duplicate payment).
#[utoipa::path(
    post, path = "/demo/payments", tag = "demo",
    request_body = DemoPayment,
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retried payment deliver the same provider event",
        min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    responses((status = 200, description = "the webhook's answer", body = super::webhooks::WebhookAnswer), PayProblems),
    security(("customer_token" = []))
)]
pub(super) async fn pay(
    State(state): State<Arc<CommandState>>,
    Customer(customer): Customer,
    headers: HeaderMap,
    ApiJson(body): ApiJson<DemoPayment>,
) -> Result<Response, Problem> {
    let demo = state
        .demo
        .as_ref()
        .ok_or_else(|| Problem::not_found("demo mode is off"))?;
    let key = idempotency_key(&headers)?;
    let kind = match body.outcome.as_str() {
        "succeeded" => "payment_intent.succeeded",
        "failed" => "payment_intent.payment_failed",
        _ => {
            return Err(Problem::unprocessable(
                "bad-outcome",
                "outcome is `succeeded` or `failed`",
            ));
        }
    };
    // Customers pay only their own reservations: look it up as this customer first.
    let outcome = state
        .writers
        .send(Request::GetReservation {
            event_id: body.event_id,
            customer: customer.clone(),
            reservation_id: body.reservation_id,
        })
        .await
        .map_err(CommandErrorProblem::from)?;
    let reservation = outcome
        .reservation
        .ok_or_else(|| Problem::internal("reservation read without a view"))?;
    let now = state.clock.now();
    let mut event = Simulator::event(
        kind,
        &body.event_id.to_string(),
        &body.reservation_id.to_string(),
        reservation.amount.amount,
        reservation.amount.currency.as_str(),
        now,
    );
    if let Some(key) = key {
        let seed = format!("{customer}\n{key}\n{}\n{}\n{kind}", body.event_id, body.reservation_id);
        let id = |prefix: &str| {
            let id = Uuid::new_v5(&PAYMENT_ID_NAMESPACE, format!("{prefix}\n{seed}").as_bytes());
            format!("{prefix}_{}", id.simple())
        };
        event.id = id("evt");
        event.data.object.id = id("pi");
    }
    let (status, answer) = demo.simulator.deliver(&event, now).await.map_err(Problem::internal)?;
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut response = (status, axum::Json(answer)).into_response();
    if !status.is_success() {
        // The webhook refused: its answer is a problem, and says so.
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(frontrow_http::openapi::PROBLEM_JSON),
        );
    }
    Ok(response)
}

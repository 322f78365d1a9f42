//! The payment provider's side of the contract: Stripe-style signed webhooks.
//!
//! The provider signs each delivery with `Stripe-Signature: t=<unix seconds>,v1=<hex>`, where
//! `v1` is HMAC-SHA256 over `"{t}.{raw body}"` with the endpoint's secret. A delivery is
//! accepted only if one `v1` matches (compared in constant time) and `t` is within the
//! tolerance of our clock, which stops replays of old captured deliveries. The work per
//! delivery is bounded whatever the header holds: a header of at most [`MAX_SIGNATURE_HEADER`]
//! bytes, at most [`MAX_SIGNATURES`] candidates, one HMAC over the body. Deliveries may still
//! repeat legitimately; that is handled by the provider event id being in the log.
//!
//! [`Simulator`] is the built-in provider for the demo: it sends correctly signed
//! `payment_intent.succeeded` / `payment_intent.payment_failed` events to our own webhook.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Longest `Stripe-Signature` header accepted. Stripe's is about 150 bytes (`t=`, one or two
/// `v1=` and a `v0=`); anything longer is refused before any hashing.
pub const MAX_SIGNATURE_HEADER: usize = 512;
/// Most `v1` candidates accepted in one header: Stripe sends two while an endpoint's secret is
/// being rolled, otherwise one.
pub const MAX_SIGNATURES: usize = 4;

/// Why a webhook delivery's signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the Stripe-Signature header is missing")]
    Missing,
    #[error("the Stripe-Signature header is malformed")]
    Malformed,
    #[error("the Stripe-Signature header is longer than {MAX_SIGNATURE_HEADER} bytes")]
    TooLong,
    #[error("the Stripe-Signature header carries more than {MAX_SIGNATURES} v1 signatures")]
    TooManySignatures,
    #[error("no v1 signature matches the body")]
    Mismatch,
    #[error("the signature's timestamp is outside the tolerance (replayed or clock skew)")]
    Stale,
}

fn mac(secret: &SecretString, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose_secret().as_bytes()).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The `Stripe-Signature` header value for `body` at `timestamp`.
pub fn sign(secret: &SecretString, timestamp: i64, body: &[u8]) -> String {
    let sig = mac(secret, timestamp, body).finalize().into_bytes();
    format!("t={timestamp},v1={}", hex::encode(sig))
}

/// A parsed `Stripe-Signature` header: its timestamp and at most [`MAX_SIGNATURES`] `v1`
/// signatures of 32 bytes each.
#[derive(Debug, PartialEq, Eq)]
struct SignatureHeader {
    timestamp: i64,
    candidates: Vec<[u8; 32]>,
}

impl SignatureHeader {
    /// Parses without touching the body: the cost is bounded by [`MAX_SIGNATURE_HEADER`].
    fn parse(header: &str) -> Result<Self, SignatureError> {
        if header.len() > MAX_SIGNATURE_HEADER {
            return Err(SignatureError::TooLong);
        }
        let mut timestamp = None;
        let mut candidates = Vec::new();
        for item in header.split(',') {
            let (k, v) = item.trim().split_once('=').ok_or(SignatureError::Malformed)?;
            match k {
                "t" => timestamp = Some(v.parse::<i64>().map_err(|_| SignatureError::Malformed)?),
                // v0 and unknown schemes are ignored, as Stripe's libraries do.
                "v1" => {
                    if candidates.len() == MAX_SIGNATURES {
                        return Err(SignatureError::TooManySignatures);
                    }
                    let mut sig = [0u8; 32];
                    hex::decode_to_slice(v, &mut sig).map_err(|_| SignatureError::Malformed)?;
                    candidates.push(sig);
                }
                _ => {}
            }
        }
        let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
        if candidates.is_empty() {
            return Err(SignatureError::Malformed);
        }
        Ok(Self { timestamp, candidates })
    }
}

/// Checks a delivery's signature header against its raw body.
///
/// The header is parsed and its timestamp checked first; only a well-formed, fresh header costs
/// one HMAC over the body, which is then compared in constant time with each candidate.
pub fn verify(
    secret: &SecretString,
    header: Option<&str>,
    body: &[u8],
    now: DateTime<Utc>,
    tolerance_secs: i64,
) -> Result<(), SignatureError> {
    let header = SignatureHeader::parse(header.ok_or(SignatureError::Missing)?)?;
    if now.timestamp().abs_diff(header.timestamp) > tolerance_secs.unsigned_abs() {
        return Err(SignatureError::Stale);
    }
    let expected = mac(secret, header.timestamp, body).finalize().into_bytes();
    // Several v1 values appear while the endpoint's secret is being rolled. Every candidate is
    // compared, so the time taken does not say which one matched.
    let matched = header
        .candidates
        .iter()
        .fold(subtle::Choice::from(0), |any, sig| any | sig.ct_eq(expected.as_slice()));
    if !bool::from(matched) {
        return Err(SignatureError::Mismatch);
    }
    Ok(())
}

/// A Stripe-shaped event delivery (the fields FrontRow reads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProviderEvent {
    /// The provider's event id, e.g. `evt_1Nx...`: the delivery's idempotency key.
    pub id: String,
    #[serde(default = "event_object")]
    pub object: String,
    /// e.g. `payment_intent.succeeded` or `payment_intent.payment_failed`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Unix seconds.
    pub created: i64,
    pub data: ProviderEventData,
}

fn event_object() -> String {
    "event".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProviderEventData {
    pub object: PaymentIntent,
}

/// A Stripe-shaped payment intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PaymentIntent {
    /// e.g. `pi_3Nx...`.
    pub id: String,
    #[serde(default = "intent_object")]
    pub object: String,
    /// Minor units.
    pub amount: i64,
    /// Lowercase ISO code, as Stripe sends it (`eur`).
    pub currency: String,
    /// Set by FrontRow when the intent was created: which reservation it pays.
    pub metadata: PaymentMetadata,
    #[serde(default)]
    pub last_payment_error: Option<PaymentError>,
}

fn intent_object() -> String {
    "payment_intent".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PaymentMetadata {
    pub event_id: String,
    pub reservation_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PaymentError {
    pub message: Option<String>,
}

/// The demo's payment provider: signs and delivers webhooks to FrontRow's own endpoint.
pub struct Simulator {
    client: reqwest::Client,
    webhook_url: String,
    secret: SecretString,
}

impl Simulator {
    pub fn new(webhook_url: String, secret: SecretString) -> Self {
        Self {
            client: crate::forward::node_client(),
            webhook_url,
            secret,
        }
    }

    /// A fresh provider event for a payment attempt.
    pub fn event(
        kind: &str,
        event_id: &str,
        reservation_id: &str,
        amount: i64,
        currency: &str,
        now: DateTime<Utc>,
    ) -> ProviderEvent {
        let failed = kind.ends_with("payment_failed");
        ProviderEvent {
            id: format!("evt_{}", uuid::Uuid::new_v4().simple()),
            object: event_object(),
            kind: kind.into(),
            created: now.timestamp(),
            data: ProviderEventData {
                object: PaymentIntent {
                    id: format!("pi_{}", uuid::Uuid::new_v4().simple()),
                    object: intent_object(),
                    amount,
                    currency: currency.to_ascii_lowercase(),
                    metadata: PaymentMetadata {
                        event_id: event_id.into(),
                        reservation_id: reservation_id.into(),
                    },
                    last_payment_error: failed.then(|| PaymentError {
                        message: Some("Your card was declined.".into()),
                    }),
                },
            },
        }
    }

    /// Delivers one event, signed at `now`; returns the webhook's status and body.
    pub async fn deliver(&self, event: &ProviderEvent, now: DateTime<Utc>) -> anyhow::Result<(u16, serde_json::Value)> {
        let body = serde_json::to_vec(event)?;
        let res = self
            .client
            .post(&self.webhook_url)
            .header("content-type", "application/json")
            .header("stripe-signature", sign(&self.secret, now.timestamp(), &body))
            .body(body)
            .send()
            .await?;
        let status = res.status().as_u16();
        let body = res.json().await.unwrap_or(serde_json::Value::Null);
        Ok((status, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> SecretString {
        SecretString::from("whsec_test")
    }

    #[test]
    fn a_good_signature_verifies() {
        let now = Utc::now();
        let body = br#"{"id":"evt_1"}"#;
        let header = sign(&secret(), now.timestamp(), body);
        assert_eq!(verify(&secret(), Some(&header), body, now, 300), Ok(()));
    }

    #[test]
    fn a_bad_signature_or_changed_body_is_refused() {
        let now = Utc::now();
        let body = br#"{"id":"evt_1"}"#;
        let header = sign(&SecretString::from("whsec_other"), now.timestamp(), body);
        assert_eq!(
            verify(&secret(), Some(&header), body, now, 300),
            Err(SignatureError::Mismatch)
        );
        let header = sign(&secret(), now.timestamp(), body);
        assert_eq!(
            verify(&secret(), Some(&header), br#"{"id":"evt_2"}"#, now, 300),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn a_stale_signature_is_refused_as_a_replay() {
        let now = Utc::now();
        let body = br#"{"id":"evt_1"}"#;
        let header = sign(&secret(), now.timestamp() - 301, body);
        assert_eq!(
            verify(&secret(), Some(&header), body, now, 300),
            Err(SignatureError::Stale)
        );
        let header = sign(&secret(), now.timestamp() + 301, body);
        assert_eq!(
            verify(&secret(), Some(&header), body, now, 300),
            Err(SignatureError::Stale)
        );
    }

    #[test]
    fn rolled_secrets_and_malformed_headers() {
        let now = Utc::now();
        let body = b"{}";
        let good = sign(&secret(), now.timestamp(), body);
        let sig = good.split("v1=").nth(1).unwrap();
        let both = format!("t={},v1={},v1={sig},v0=abc", now.timestamp(), "00".repeat(32));
        assert_eq!(verify(&secret(), Some(&both), body, now, 300), Ok(()));
        assert_eq!(verify(&secret(), None, body, now, 300), Err(SignatureError::Missing));
        assert_eq!(
            verify(&secret(), Some("garbage"), body, now, 300),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(&secret(), Some("t=1"), body, now, 300),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(&secret(), Some("t=x,v1=00"), body, now, 300),
            Err(SignatureError::Malformed)
        );
    }
    #[test]
    fn forged_headers_are_refused_before_any_hashing() {
        let now = Utc::now();
        let body = vec![b'x'; 1 << 20];
        let t = now.timestamp();
        // Tens of thousands of candidates: refused for the header's length alone.
        let flood = format!("t={t},{}", "v1=00,".repeat(40_000));
        assert_eq!(
            verify(&secret(), Some(&flood), &body, now, 300),
            Err(SignatureError::TooLong)
        );
        // Short enough, but more candidates than Stripe ever sends.
        let sig = "ab".repeat(32);
        let five = format!("t={t},{}", [sig.as_str(); 5].map(|s| format!("v1={s}")).join(","));
        assert!(five.len() <= MAX_SIGNATURE_HEADER);
        assert_eq!(
            verify(&secret(), Some(&five), &body, now, 300),
            Err(SignatureError::TooManySignatures)
        );
        // A candidate that is not a SHA-256 in hex is malformed, not a mismatch.
        assert_eq!(
            verify(&secret(), Some(&format!("t={t},v1=00")), &body, now, 300),
            Err(SignatureError::Malformed)
        );
        // A stale timestamp is refused whatever the signature.
        assert_eq!(
            verify(&secret(), Some(&format!("t={},v1={sig}", t - 301)), &body, now, 300),
            Err(SignatureError::Stale)
        );
        // The maximum of candidates, the right one last, still verifies.
        let good = sign(&secret(), t, &body);
        let right = good.split("v1=").nth(1).unwrap();
        let four = format!("t={t},v1={sig},v1={sig},v1={sig},v1={right}");
        assert_eq!(verify(&secret(), Some(&four), &body, now, 300), Ok(()));
    }
}

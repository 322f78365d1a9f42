//! Admission tokens: the waiting room's signed, time-limited pass to reserve.
//!
//! A token says "customer C holds queue ticket T of event E until X" and is an HMAC-SHA256 over
//! exactly those four values, keyed with a key derived from the customer-token secret (so one
//! configured secret serves both, and a customer JWT can never pass for an admission token or
//! the other way round). Any node with the secret verifies a token without a lookup; whether
//! the admission is still unspent and holds no other reservation is the event writer's call.
//!
//! The wire form is `fra1.<base64url(JSON claims)>.<base64url(MAC)>`.

use chrono::{DateTime, Utc};
use frontrow_schema::{CustomerId, EventId};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::auth::{Auth, encode_json, sign, verify_signed};

const PREFIX: &str = "fra1";

/// What an admission token grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Admission {
    #[serde(rename = "e")]
    pub event_id: EventId,
    #[serde(rename = "c")]
    pub customer: CustomerId,
    #[serde(rename = "t")]
    pub ticket: u64,
    /// Unix seconds.
    #[serde(rename = "x")]
    pub expires: i64,
}

/// Why an admission token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    #[error("the admission token is not one this service issued")]
    Invalid,
    #[error("the admission token has expired")]
    Expired,
    #[error("the admission token is for another event")]
    OtherEvent,
    #[error("the admission token belongs to another customer")]
    OtherCustomer,
}

impl Auth {
    fn admission_mac(&self) -> Hmac<Sha256> {
        let mut derive = self.mac();
        derive.update(b"frontrow admission token v1");
        let key = derive.finalize().into_bytes();
        Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length")
    }

    /// Issues the admission token of `customer`'s ticket `ticket` at `event_id`, valid until
    /// `expires`. The same inputs always give the same token, so any node can hand it out.
    pub fn admission_token(
        &self,
        event_id: EventId,
        customer: &CustomerId,
        ticket: u64,
        expires: DateTime<Utc>,
    ) -> String {
        let claims = Admission {
            event_id,
            customer: customer.clone(),
            ticket,
            expires: expires.timestamp(),
        };
        sign(self.admission_mac(), PREFIX, &encode_json(&claims))
    }

    /// Checks an admission token for `customer` at `event_id` at time `now`: the signature
    /// first (in constant time), then what it grants.
    pub fn verify_admission(
        &self,
        token: &str,
        event_id: EventId,
        customer: &CustomerId,
        now: DateTime<Utc>,
    ) -> Result<Admission, AdmissionError> {
        if token.len() > crate::auth::MAX_TOKEN_BYTES {
            return Err(AdmissionError::Invalid);
        }
        let mut parts = token.trim().split('.');
        let (Some(PREFIX), Some(claims), Some(sig), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(AdmissionError::Invalid);
        };
        let admission: Admission =
            verify_signed(self.admission_mac(), PREFIX, claims, sig).map_err(|_| AdmissionError::Invalid)?;
        if admission.event_id != event_id {
            return Err(AdmissionError::OtherEvent);
        }
        if &admission.customer != customer {
            return Err(AdmissionError::OtherCustomer);
        }
        if admission.expires <= now.timestamp() {
            return Err(AdmissionError::Expired);
        }
        Ok(admission)
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
    use secrecy::SecretString;

    use super::*;

    #[test]
    fn tokens_verify_only_for_their_event_customer_and_time() {
        let auth = Auth::new(SecretString::from("s3cret"), []);
        let (event, other_event) = (EventId::new(), EventId::new());
        let alice = CustomerId::parse("alice").unwrap();
        let bob = CustomerId::parse("bob").unwrap();
        let now = Utc::now();
        let until = now + chrono::Duration::minutes(10);
        let token = auth.admission_token(event, &alice, 7, until);
        assert_eq!(token, auth.admission_token(event, &alice, 7, until), "deterministic");
        let ok = auth.verify_admission(&token, event, &alice, now).unwrap();
        assert_eq!((ok.ticket, ok.expires), (7, until.timestamp()));
        assert_eq!(
            auth.verify_admission(&token, other_event, &alice, now),
            Err(AdmissionError::OtherEvent)
        );
        assert_eq!(
            auth.verify_admission(&token, event, &bob, now),
            Err(AdmissionError::OtherCustomer)
        );
        assert_eq!(
            auth.verify_admission(&token, event, &alice, until),
            Err(AdmissionError::Expired)
        );
        // Another secret, a changed claim, a customer JWT: not admission tokens.
        let other = Auth::new(SecretString::from("other"), []);
        assert_eq!(
            other.verify_admission(&token, event, &alice, now),
            Err(AdmissionError::Invalid)
        );
        let forged_claims = B64.encode(
            serde_json::to_vec(&Admission {
                event_id: event,
                customer: alice.clone(),
                ticket: 8,
                expires: until.timestamp(),
            })
            .unwrap(),
        );
        let sig = token.rsplit('.').next().unwrap();
        let forged = format!("{PREFIX}.{forged_claims}.{sig}");
        assert_eq!(
            auth.verify_admission(&forged, event, &alice, now),
            Err(AdmissionError::Invalid)
        );
        let jwt = auth.mint(&alice, now, until);
        assert_eq!(
            auth.verify_admission(&jwt, event, &alice, now),
            Err(AdmissionError::Invalid)
        );
        assert_eq!(
            auth.verify_admission("", event, &alice, now),
            Err(AdmissionError::Invalid)
        );
    }
}

//! Who is calling.
//!
//! Organizers present an API key (`X-Api-Key`); each key names one organizer, and an event
//! belongs to the organizer who created it. Customers present a bearer token (a JWT signed with
//! HS256 and a configured secret) whose `sub` claim is their customer id. Nothing trusts a
//! customer or organizer id sent in a body or a header of the caller's choosing.
//!
//! [`Auth`] is put into the request extensions by a layer; the [`Customer`] and [`Organizer`]
//! extractors read it, so any router can use them whatever its state type.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use chrono::{DateTime, Utc};
use frontrow_schema::{CustomerId, OrganizerId};
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Problem;

/// Seconds of clock skew allowed on a token's `exp` and `nbf`.
const LEEWAY_SECS: i64 = 30;
/// Longest bearer token looked at (FrontRow's own are about 150 bytes; an identity provider's
/// JWT with a few claims stays well under this).
pub const MAX_TOKEN_BYTES: usize = 4096;

/// The secrets that say who is who.
pub struct Auth {
    token_secret: SecretString,
    /// SHA-256 of each API key -> its organizer: a lookup by digest does not leak key bytes
    /// through timing, and the keys themselves are not kept.
    organizers: HashMap<[u8; 32], OrganizerId>,
    /// Tokens whose signature this process has checked, by their whole text: a customer's next
    /// request with the same token costs a lookup instead of base64, JSON and HMAC-SHA256 again.
    /// Only tokens signed with this secret get in, and their times are checked on every use.
    verified: std::sync::Mutex<HashMap<Box<str>, Signed>>,
}

/// Tokens [`Auth::verify`] remembers at most; it forgets them all when it has this many.
const VERIFIED_TOKENS: usize = 16_384;

/// What a token's signed claims say, checked against the clock on each use.
#[derive(Debug, Clone)]
struct Signed {
    /// `None`: the subject is not a valid customer id.
    customer: Option<CustomerId>,
    exp: i64,
    nbf: Option<i64>,
}

impl Signed {
    /// The customer, if the token is valid at `now` (seconds since the epoch).
    fn valid_at(&self, now: i64) -> Result<CustomerId, TokenError> {
        if self.exp + LEEWAY_SECS <= now {
            return Err(TokenError::Expired);
        }
        if self.nbf.is_some_and(|nbf| nbf - LEEWAY_SECS > now) {
            return Err(TokenError::NotYetValid);
        }
        self.customer.clone().ok_or(TokenError::BadSubject)
    }
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("organizers", &self.organizers.len())
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    exp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iat: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nbf: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct Header {
    alg: String,
}

/// Why a bearer token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    Malformed,
    WrongAlgorithm(String),
    BadSignature,
    Expired,
    NotYetValid,
    BadSubject,
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::Malformed => f.write_str("the bearer token is not a JWT"),
            TokenError::WrongAlgorithm(alg) => write!(f, "tokens must be signed with HS256, not {alg}"),
            TokenError::BadSignature => f.write_str("the token's signature is not valid"),
            TokenError::Expired => f.write_str("the token has expired"),
            TokenError::NotYetValid => f.write_str("the token is not valid yet"),
            TokenError::BadSubject => f.write_str("the token's subject is not a valid customer id"),
        }
    }
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// Why a signed token `<head>.<body>.<signature>` was refused.
pub(crate) enum Unsigned {
    /// A part is not base64url, or the body not the JSON expected.
    Malformed,
    /// The signature is not `mac`'s over `<head>.<body>`.
    BadSignature,
}

/// `value` as JSON in base64url, the body of a signed token.
pub(crate) fn encode_json(value: &impl Serialize) -> String {
    B64.encode(serde_json::to_vec(value).expect("claims serialise"))
}

/// The value of a base64url JSON part, or `None` when it is not one.
fn decode_json<T: DeserializeOwned>(part: &str) -> Option<T> {
    B64.decode(part).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

/// The token `<head>.<body>.<signature>`, signed with `mac` over `<head>.<body>`.
pub(crate) fn sign(mut mac: Hmac<Sha256>, head: &str, body: &str) -> String {
    mac.update(head.as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!("{head}.{body}.{}", B64.encode(mac.finalize().into_bytes()))
}

/// The body of a token `<head>.<body>.<signature>`, decoded from base64url JSON once the
/// signature has proved `mac`'s over `<head>.<body>` (compared in constant time).
pub(crate) fn verify_signed<T: DeserializeOwned>(
    mut mac: Hmac<Sha256>,
    head: &str,
    body: &str,
    signature: &str,
) -> Result<T, Unsigned> {
    let signature = B64.decode(signature).map_err(|_| Unsigned::Malformed)?;
    mac.update(head.as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    mac.verify_slice(&signature).map_err(|_| Unsigned::BadSignature)?;
    decode_json(body).ok_or(Unsigned::Malformed)
}

impl Auth {
    pub fn new(
        token_secret: SecretString,
        organizer_keys: impl IntoIterator<Item = (OrganizerId, SecretString)>,
    ) -> Self {
        let organizers = organizer_keys
            .into_iter()
            .map(|(id, key)| (digest(key.expose_secret()), id))
            .collect();
        Self {
            token_secret,
            organizers,
            verified: std::sync::Mutex::default(),
        }
    }

    pub(crate) fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(self.token_secret.expose_secret().as_bytes()).expect("HMAC takes any key length")
    }

    /// Issues a customer token valid until `expires` (for the demo and for tests).
    pub fn mint(&self, customer: &CustomerId, now: DateTime<Utc>, expires: DateTime<Utc>) -> String {
        let header = B64.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let claims = Claims {
            sub: customer.to_string(),
            exp: expires.timestamp(),
            iat: Some(now.timestamp()),
            nbf: None,
        };
        sign(self.mac(), &header, &encode_json(&claims))
    }

    /// Verifies a customer token at time `now`.
    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<CustomerId, TokenError> {
        // Bounds the decoding and hashing an arbitrary header may cost.
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::Malformed);
        }
        let now = now.timestamp();
        let seen = self.verified.lock().expect("verified tokens").get(token).cloned();
        if let Some(signed) = seen {
            return signed.valid_at(now);
        }
        let signed = self.check_signature(token)?;
        let answer = signed.valid_at(now);
        let mut verified = self.verified.lock().expect("verified tokens");
        if verified.len() >= VERIFIED_TOKENS {
            verified.clear();
        }
        verified.insert(token.into(), signed);
        answer
    }

    /// A token's algorithm, signature and claims, read without regard to the time.
    fn check_signature(&self, token: &str) -> Result<Signed, TokenError> {
        let mut parts = token.split('.');
        let (Some(h), Some(c), Some(sig), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(TokenError::Malformed);
        };
        let header: Header = decode_json(h).ok_or(TokenError::Malformed)?;
        if header.alg != "HS256" {
            return Err(TokenError::WrongAlgorithm(header.alg));
        }
        let claims: Claims = verify_signed(self.mac(), h, c, sig).map_err(|e| match e {
            Unsigned::Malformed => TokenError::Malformed,
            Unsigned::BadSignature => TokenError::BadSignature,
        })?;
        Ok(Signed {
            customer: CustomerId::parse(&claims.sub).ok(),
            exp: claims.exp,
            nbf: claims.nbf,
        })
    }

    /// The organizer an API key belongs to.
    pub fn organizer(&self, api_key: &str) -> Option<&OrganizerId> {
        self.organizers.get(&digest(api_key))
    }
}

fn auth(parts: &Parts) -> Result<&Arc<Auth>, Problem> {
    parts
        .extensions
        .get::<Arc<Auth>>()
        .ok_or_else(|| Problem::internal("Auth missing from request extensions"))
}

/// The verified customer calling, from `Authorization: Bearer <token>`.
#[derive(Debug, Clone)]
pub struct Customer(pub CustomerId);

impl<S: Send + Sync> FromRequestParts<S> for Customer {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        // Already verified by the rate-limit middleware (only server code sets extensions).
        if let Some(customer) = parts.extensions.get::<Customer>() {
            return Ok(customer.clone());
        }
        let auth = auth(parts)?;
        let value = parts
            .headers
            .get(AUTHORIZATION)
            .ok_or_else(|| Problem::unauthorized("sign in: send Authorization: Bearer <token>"))?;
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .ok_or_else(|| Problem::unauthorized("the Authorization header must be Bearer <token>"))?;
        verify_now(auth, token).map(Customer)
    }
}

/// The customer a bearer token names, verified now; a refused token is 401.
fn verify_now(auth: &Auth, token: &str) -> Result<CustomerId, Problem> {
    auth.verify(token.trim(), Utc::now())
        .map_err(|e| Problem::unauthorized(e.to_string()))
}

/// The verified customer of a server-sent event stream: from `Authorization: Bearer <token>`,
/// or from the `access_token` query parameter, since a browser's `EventSource` cannot send
/// headers. Only stream endpoints take it; everything else wants the header.
#[derive(Debug, Clone)]
pub struct StreamCustomer(pub CustomerId);

impl<S: Send + Sync> FromRequestParts<S> for StreamCustomer {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        if parts.headers.contains_key(AUTHORIZATION) {
            return Customer::from_request_parts(parts, state)
                .await
                .map(|Customer(c)| StreamCustomer(c));
        }
        let auth = auth(parts)?;
        let token = axum::extract::Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
            .ok()
            .and_then(|q| q.0.get("access_token").cloned())
            .ok_or_else(|| {
                Problem::unauthorized("sign in: send Authorization: Bearer <token>, or ?access_token=<token>")
            })?;
        verify_now(auth, &token).map(StreamCustomer)
    }
}

/// The organizer calling, from `X-Api-Key`.
#[derive(Debug, Clone)]
pub struct Organizer(pub OrganizerId);

impl<S: Send + Sync> FromRequestParts<S> for Organizer {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let auth = auth(parts)?;
        let key = parts
            .headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| Problem::unauthorized("organizer endpoints need an X-Api-Key header"))?;
        auth.organizer(key)
            .cloned()
            .map(Organizer)
            .ok_or_else(|| Problem::unauthorized("the API key is not valid"))
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;

    fn auth() -> Auth {
        Auth::new(
            SecretString::from("test-secret"),
            [(OrganizerId::parse("acme").unwrap(), SecretString::from("key-1"))],
        )
    }

    #[test]
    fn minted_tokens_verify_until_they_expire() {
        let a = auth();
        let alice = CustomerId::parse("alice").unwrap();
        let now = Utc::now();
        let token = a.mint(&alice, now, now + chrono::Duration::minutes(5));
        assert_eq!(a.verify(&token, now), Ok(alice));
        assert_eq!(
            a.verify(&token, now + chrono::Duration::minutes(6)),
            Err(TokenError::Expired)
        );
    }

    #[test]
    fn forged_and_tampered_tokens_are_refused() {
        let a = auth();
        let now = Utc::now();
        let token = a.mint(
            &CustomerId::parse("alice").unwrap(),
            now,
            now + chrono::Duration::minutes(5),
        );
        let other = Auth::new(SecretString::from("another-secret"), []);
        assert_eq!(other.verify(&token, now), Err(TokenError::BadSignature));
        // Swap the claims for bob's, keep alice's signature.
        let parts: Vec<_> = token.split('.').collect();
        let bob = B64.encode(format!(r#"{{"sub":"bob","exp":{}}}"#, now.timestamp() + 300));
        assert_eq!(
            a.verify(&format!("{}.{bob}.{}", parts[0], parts[2]), now),
            Err(TokenError::BadSignature)
        );
        // alg=none is refused before any signature check.
        let none = B64.encode(br#"{"alg":"none"}"#);
        assert!(matches!(
            a.verify(&format!("{none}.{}.", parts[1]), now),
            Err(TokenError::WrongAlgorithm(_))
        ));
        assert_eq!(a.verify("not a token", now), Err(TokenError::Malformed));
    }

    #[test]
    fn a_token_checked_once_is_still_checked_against_the_clock_and_its_exact_text() {
        let a = auth();
        let now = Utc::now();
        let alice = CustomerId::parse("alice").unwrap();
        let token = a.mint(&alice, now, now + chrono::Duration::minutes(5));
        for _ in 0..2 {
            assert_eq!(a.verify(&token, now), Ok(alice.clone()));
        }
        // The remembered check does not vouch for another text: one changed signature byte.
        let mut forged = token.clone().into_bytes();
        let inside = forged.len() - 5; // a signature character all of whose bits are data
        forged[inside] = if forged[inside] == b'A' { b'B' } else { b'A' };
        let forged = String::from_utf8(forged).unwrap();
        assert_eq!(a.verify(&forged, now), Err(TokenError::BadSignature));
        assert_eq!(a.verify(&forged, now), Err(TokenError::BadSignature));
        // Nor for another secret's process.
        let other = Auth::new(SecretString::from("another-secret"), []);
        assert_eq!(other.verify(&token, now), Err(TokenError::BadSignature));
        // Times are read again on every use: not yet valid, then valid, then expired.
        let head = B64.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let later = |sub: &str| Claims {
            sub: sub.into(),
            exp: now.timestamp() + 600,
            iat: None,
            nbf: Some(now.timestamp() + 120),
        };
        let early = sign(a.mac(), &head, &encode_json(&later("alice")));
        assert_eq!(a.verify(&early, now), Err(TokenError::NotYetValid));
        assert_eq!(a.verify(&early, now + chrono::Duration::minutes(3)), Ok(alice.clone()));
        assert_eq!(
            a.verify(&early, now + chrono::Duration::minutes(11)),
            Err(TokenError::Expired)
        );
        // A signed token whose subject is no customer id is refused each time.
        let nobody = sign(a.mac(), &head, &encode_json(&later("not a customer!")));
        for _ in 0..2 {
            assert_eq!(
                a.verify(&nobody, now + chrono::Duration::minutes(3)),
                Err(TokenError::BadSubject)
            );
        }
    }

    #[test]
    fn the_tokens_remembered_are_bounded() {
        let a = auth();
        let now = Utc::now();
        for i in 0..VERIFIED_TOKENS + 10 {
            let customer = CustomerId::parse(&format!("fan{i}")).unwrap();
            let token = a.mint(&customer, now, now + chrono::Duration::minutes(5));
            assert_eq!(a.verify(&token, now), Ok(customer));
        }
        let kept = a.verified.lock().unwrap().len();
        assert!((1..=VERIFIED_TOKENS).contains(&kept), "{kept} tokens kept");
    }

    async fn stream_customer(uri: &str, bearer: Option<&str>) -> Result<CustomerId, Problem> {
        let mut request = axum::http::Request::builder().uri(uri);
        if let Some(token) = bearer {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        let (mut parts, ()) = request.body(()).unwrap().into_parts();
        parts.extensions.insert(Arc::new(auth()));
        StreamCustomer::from_request_parts(&mut parts, &()).await.map(|c| c.0)
    }

    #[tokio::test]
    async fn event_streams_take_the_token_from_the_header_or_the_query() {
        let a = auth();
        let now = Utc::now();
        let alice = CustomerId::parse("alice").unwrap();
        let token = a.mint(&alice, now, now + chrono::Duration::minutes(5));
        let uri = format!("/events/x/queue/me/stream?access_token={token}");
        assert_eq!(stream_customer(&uri, None).await.unwrap(), alice);
        assert_eq!(stream_customer("/s", Some(&token)).await.unwrap(), alice);
        // The header wins: a bad header is refused even with a good query token.
        assert_eq!(
            stream_customer(&uri, Some("forged")).await.unwrap_err().status,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            stream_customer("/s?access_token=forged", None)
                .await
                .unwrap_err()
                .status,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            stream_customer("/s", None).await.unwrap_err().status,
            StatusCode::UNAUTHORIZED
        );
    }

    #[test]
    fn api_keys_name_their_organizer() {
        let a = auth();
        assert_eq!(a.organizer("key-1").map(|o| o.as_str()), Some("acme"));
        assert!(a.organizer("key-2").is_none());
    }
}

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// An RFC 9457 problem: what went wrong, for the client, as `application/problem+json`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem, e.g. `urn:frontrow:problem:seats-unavailable`.
    #[serde(rename = "type", serialize_with = "problem_uri")]
    #[schema(value_type = String)]
    pub kind: &'static str,
    pub title: &'static str,
    #[schema(value_type = u16)]
    #[serde(serialize_with = "status_code")]
    pub status: StatusCode,
    pub detail: String,
    /// Problem-specific members, e.g. `seats` for unavailable seats.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object)]
    pub extra: Option<Box<Map<String, Value>>>,
    #[serde(skip)]
    pub retry_after: Option<u32>,
    #[serde(skip)]
    pub www_authenticate: Option<&'static str>,
    /// Typed facts for the server's own layers (a middleware reads them from the response's
    /// extensions), never sent to the client.
    #[serde(skip)]
    pub hand_offs: axum::http::Extensions,
}

fn problem_uri<S: serde::Serializer>(slug: &&'static str, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("urn:frontrow:problem:{slug}"))
}

fn status_code<S: serde::Serializer>(status: &StatusCode, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u16(status.as_u16())
}

impl Problem {
    /// A problem of kind `slug` (a short kebab-case name) with a human explanation.
    pub fn new(status: StatusCode, slug: &'static str, detail: impl Into<String>) -> Self {
        Self {
            kind: slug,
            title: status.canonical_reason().unwrap_or("Error"),
            status,
            detail: detail.into(),
            extra: None,
            retry_after: None,
            www_authenticate: None,
            hand_offs: axum::http::Extensions::new(),
        }
    }

    /// Attaches a typed fact to the response for a layer of this server (e.g. which partition
    /// a `not-owner` refusal is about, for the forwarder); the client never sees it.
    pub fn hand_off<T: Clone + Send + Sync + 'static>(mut self, fact: T) -> Self {
        self.hand_offs.insert(fact);
        self
    }

    /// Adds a member to the body.
    pub fn with(mut self, key: &str, value: impl Serialize) -> Self {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        self.extra
            .get_or_insert_with(Default::default)
            .insert(key.to_owned(), value);
        self
    }

    /// Asks the client to come back after `seconds` (`Retry-After`).
    pub fn retry_after(mut self, seconds: u32) -> Self {
        self.retry_after = Some(seconds);
        self.with("retry_after", seconds)
    }

    pub fn bad_request(slug: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, slug, detail)
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", detail)
    }

    pub fn unprocessable(slug: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, slug, detail)
    }

    pub fn conflict(slug: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, slug, detail)
    }

    /// Overload: shed with `503` and a `Retry-After`, never queued without bound.
    pub fn overloaded(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", detail).retry_after(1)
    }

    pub fn unauthorized(detail: impl Into<String>) -> Self {
        let mut p = Self::new(StatusCode::UNAUTHORIZED, "unauthorized", detail);
        p.www_authenticate = Some("Bearer");
        p
    }

    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", detail)
    }

    /// Our failure, not the client's: the cause is logged, the client sees a generic text.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "something went wrong on our side",
        )
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        if self.status.is_server_error() && self.status != StatusCode::SERVICE_UNAVAILABLE {
            tracing::warn!(status = self.status.as_u16(), kind = %self.kind, "server error answered");
        }
        let body = serde_json::to_vec(&self).unwrap_or_default();
        let mut res = (self.status, body).into_response();
        let headers = res.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Some(challenge) = self.www_authenticate {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
        }
        res.extensions_mut().extend(self.hand_offs);
        res
    }
}

/// The answer for a path no route matches.
pub async fn fallback() -> Problem {
    Problem::not_found("no such resource")
}

/// The answer for a known path with the wrong method.
pub async fn method_not_allowed() -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "this resource does not support that method",
    )
}

//! Extractors whose every rejection is a [`Problem`].

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::Problem;
use crate::strict::StrictBody;

/// A JSON body; a malformed, mistyped, oversized or non-JSON body is a problem. A struct, at any
/// depth, is read only from an object: an array in its place is mistyped (see [`crate::strict`]).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<StrictBody<T>>::from_request(req, state).await {
            Ok(axum::Json(StrictBody(v))) => Ok(Self(v)),
            Err(e) => Err(json_problem(e)),
        }
    }
}

fn json_problem(e: JsonRejection) -> Problem {
    match &e {
        JsonRejection::JsonDataError(_) => Problem::unprocessable("invalid-body", e.body_text()),
        JsonRejection::JsonSyntaxError(_) => Problem::bad_request("malformed-json", e.body_text()),
        JsonRejection::MissingJsonContentType(_) => Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "send the body as JSON with Content-Type: application/json",
        ),
        JsonRejection::BytesRejection(b) => bytes_problem_status(b.status(), e.body_text()),
        _ => Problem::bad_request("bad-request", e.body_text()),
    }
}

fn bytes_problem_status(status: StatusCode, text: String) -> Problem {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        Problem::new(
            status,
            "body-too-large",
            "the request body is larger than this endpoint accepts",
        )
    } else {
        Problem::bad_request("bad-body", text)
    }
}

/// The raw body; an oversized or broken body is a problem.
pub struct ApiBytes(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for ApiBytes {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        Bytes::from_request(req, state)
            .await
            .map(Self)
            .map_err(|e: BytesRejection| bytes_problem_status(e.status(), e.body_text()))
    }
}

/// Path parameters; one that does not parse (a bad id) is a `404` naming the parameter.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Self(p.0))
            .map_err(|e: PathRejection| Problem::not_found(e.body_text()))
    }
}

/// Query parameters; malformed ones are a `400`.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Self(q.0))
            .map_err(|e: QueryRejection| Problem::bad_request("bad-query", e.body_text()))
    }
}

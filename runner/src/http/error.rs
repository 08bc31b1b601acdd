//! The API's error answer: a status, a stable code and a message in words, as JSON
//! `{error, code}` ([`crate::api::ApiError`]).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::api::ApiError;

/// An error answer.
#[derive(Debug)]
pub struct Failure {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl Failure {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }
    /// Whether it is "sign in first" (no session, or an expired one).
    pub(crate) fn is_unauthenticated(&self) -> bool {
        self.status == StatusCode::UNAUTHORIZED
    }
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid", message)
    }
    pub(crate) fn internal(e: impl std::fmt::Display) -> Self {
        tracing::error!("internal error: {e}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the runner could not do this (its log says why); try again",
        )
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let body = ApiError {
            error: self.message,
            code: self.code.to_owned(),
        };
        (self.status, axum::Json(body)).into_response()
    }
}

pub(crate) fn too_large(message: String) -> Failure {
    Failure::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message)
}

pub(crate) fn unavailable(message: String) -> Failure {
    Failure::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
}

/// A handler's result: its answer, or the error answer.
pub(crate) type Answer<T> = Result<T, Failure>;

//! The HTTP API ([`crate::api`] lists its routes and bodies): the router ([`router`], the one
//! place routes, their body limits and layers are put together), its handlers grouped by
//! resource, and the server that runs it ([`serve`]).
//!
//! Every error is JSON `{error, code}` ([`error::Failure`]) with a status that says whose move it
//! is: 400/413/422 the request, 408 a body too slow, 401 sign in, 403 another wallet's, 404 no
//! such thing, 409 not yet (or, for a check, already done), 503 the chain did not answer (or,
//! `busy`, the runner reads as many uploads as it reads at once). Bodies are read only within
//! [`intake`]'s bounds.
//!
//! Layers, each using only those before it: [`error`] (the error answer) ← [`extract`] (the
//! session, the owned run, blocking work, private answers) ← [`intake`] (bodies within bounds)
//! ← the handlers ([`info`], [`session`], [`uploads`], [`runs`], [`events`], [`page`],
//! [`chain`], [`verify`], [`ops`]) ← [`router`] ← [`serve`] (with [`connections`], the accept loop).

pub mod chain;
pub mod connections;
pub mod error;
pub mod events;
pub mod extract;
pub mod info;
pub mod intake;
pub mod ops;
pub mod page;
pub mod router;
pub mod runs;
pub mod serve;
pub mod session;
pub mod uploads;
pub mod verify;

pub use page::CSP;
pub use router::{router, router_with};
pub use serve::{Ready, serve, serve_until};

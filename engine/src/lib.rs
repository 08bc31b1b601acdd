//! SkillTrial's local execution: the part of the off-chain code that touches a disk, a network
//! or a keychain. The CLI is a thin shell over it (and over `skilltrial-core`, the pure part).
//!
//! [`store`] keeps content-addressed blobs (fsync + rename); [`answers`] reads a stored answer
//! (journal or store); [`journal`] is the SQLite journal of
//! runs, attempts, money and verdicts; [`engine`] loads a planned manifest's pinned inputs and
//! runs it trial by trial; [`provider`] is the only code that speaks HTTP to models; [`keys`]
//! reads model keys from the environment or the OS keychain; [`home`] resolves where state
//! lives and [`state`] opens it; [`packs`] opens a pack to run with; [`scripted`] is a loopback
//! model server speaking both wire formats, and [`demo`] its script and the whole demo run;
//! [`report`] turns a journal into the report. Nothing in this crate prints to a terminal
//! or picks exit codes.

pub mod answers;
pub mod demo;
pub mod engine;
pub mod files;
pub mod home;
pub mod journal;
pub mod keys;
pub mod packs;
pub mod provider;
pub mod report;
pub mod scripted;
pub mod state;
pub mod store;

pub use skilltrial_core::APP_VERSION;

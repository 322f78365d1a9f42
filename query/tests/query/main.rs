//! The query side against a real embedded journal: following the log, and the read API.

mod following;
mod http;
mod sse;
mod support;

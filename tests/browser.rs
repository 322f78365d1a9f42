//! The fan web app in a real browser: headless Chromium driven through chromedriver
//! ([`frontrow_browser`]) against the real server on port 0 ([`common::TestApp`], demo mode on,
//! manual clock). Every test saves screenshots under `target/screenshots/` (named after the
//! test and the step) so a reviewer can see what the fan saw; a wait that times out fails with
//! what it waited for and a `timeout-*` screenshot.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (`deploy/local/chromium.sh`), so
//! every test is ignored by plain `cargo test`; run them with
//! `cargo test --workspace --test browser -- --include-ignored` or the README's test command.

#[path = "common/mod.rs"]
mod common;

#[path = "browser/support.rs"]
mod support;

#[path = "browser/big_map.rs"]
mod big_map;
#[path = "browser/catalogue.rs"]
mod catalogue;
#[path = "browser/checkout.rs"]
mod checkout;
#[path = "browser/errors.rs"]
mod errors;
#[path = "browser/live.rs"]
mod live;
#[path = "browser/my_bookings.rs"]
mod my_bookings;
#[path = "browser/seating_attributes.rs"]
mod seating_attributes;
#[path = "browser/waiting_room.rs"]
mod waiting_room;
#[path = "browser/zones.rs"]
mod zones;

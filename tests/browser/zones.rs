//! General admission in the browser: a standing zone shows as a block with its free places,
//! a fan holds a count of places from it and pays, and the block follows other fans' holds
//! live through the seat stream's `zone` events.

use frontrow_browser::{Browser, Viewport};
use serde_json::{Value, json};

use crate::support::*;

const ZONE: &str = ".zone[data-zone=\"FLOOR\"]";

/// Waits until the zone's block says `places` (e.g. "47 of 50").
async fn zone_shows(b: &Browser, places: &str) -> anyhow::Result<String> {
    b.wait_for_text(&format!("{ZONE} .zone-available"), places, WAIT).await
}

/// Checks the page's counts of the zone (`frontrowMap.zone`) once its block says `places`:
/// each count named in `expected` has its value (`when` says at which step, on failure).
async fn check_zone_counts(
    b: &Browser,
    shot: &str,
    places: &str,
    expected: &[(&str, u64)],
    when: &str,
) -> anyhow::Result<()> {
    zone_shows(b, places).await?;
    let counts = b.js("return window.frontrowMap.zone('FLOOR');", vec![]).await?;
    let ok = expected.iter().all(|(name, n)| counts[*name] == *n);
    b.check(shot, ok, format!("{when}the page's zone counts: {counts}"))
        .await
}

#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_fan_holds_places_from_a_standing_zone_and_its_count_follows_live() -> anyhow::Result<()> {
    let (scene, event) = Scene::with_event(|body| body["seat_map"] = crate::common::mixed_seat_map(6, 50)).await?;
    let app = &scene.app;
    let zone = |who: &'static str, count: u8| async move {
        let key = uuid::Uuid::new_v4().to_string();
        let res = app
            .reserve(who, event, &key, json!({"zone": "FLOOR", "count": count}))
            .await;
        anyhow::ensure!(res.status() == 201, "reserving from the zone: {}", res.status());
        res.json::<Value>().await.map_err(anyhow::Error::from)
    };
    zone("bob", 3).await?;

    let b = scene.fan_on("alice", Viewport::DESKTOP, event).await?;
    zone_shows(&b, "47 of 50 places left").await?;
    b.screenshot("zones-1-block").await?;

    // Three places: replace the picker's value with real keys, then hold.
    b.type_into(&format!("{ZONE} .zone-count"), "\u{E003}3").await?;
    b.click(&format!("{ZONE} .zone-hold")).await?;
    b.wait_for("#hold-panel:not([hidden])", WAIT).await?;
    let held = b.wait_for_text("#hold-seats", "FLOOR standing, place 6", WAIT).await?;
    b.check(
        "zones-held-places",
        held.contains("place 4") && held.contains("place 5"),
        format!("held places: {held:?}"),
    )
    .await?;
    b.wait_for_text("#hold-total", "90", WAIT).await?;
    // The block heard of the hold through the stream.
    zone_shows(&b, "44 of 50").await?;
    b.screenshot("zones-2-held").await?;

    // Another fan's hold shows up live.
    zone("carol", 2).await?;
    check_zone_counts(&b, "zones-counts", "42 of 50", &[("held", 8), ("available", 42)], "").await?;

    b.click("#pay-button").await?;
    b.wait_for("#confirmation:not([hidden])", WAIT).await?;
    let booking = b.text("#booking-id").await?;
    let reservation = scene
        .api_as(&b, &format!("/events/{event}/reservations/{}", booking.trim()))
        .await?;
    b.check(
        "zones-booked",
        reservation["status"] == "booked" && reservation["seats"].as_array().is_some_and(|s| s.len() == 3),
        format!("the reservation is {reservation}"),
    )
    .await?;
    let after_paying = [("booked", 3), ("held", 5)];
    check_zone_counts(&b, "zones-booked-counts", "42 of 50", &after_paying, "after paying, ").await?;
    b.screenshot("zones-3-booked").await?;
    scene.finish([b]).await
}

//! A 200,000-seat event (the most an event may have) opens and stays usable: the overview by
//! section draws, clicking a section zooms into it, a click on a seat there picks it.

use frontrow_browser::Viewport;
use serde_json::{Value, json};

use crate::support::*;

/// 20 sections of 50 rows of 200 seats.
fn stadium(body: &mut Value) {
    let sections: Vec<Value> = (1..=20)
        .map(|s| {
            let rows: Vec<Value> = (1..=50)
                .map(|r| json!({"name": r.to_string(), "seats": 200, "tier": if r <= 10 { "GOLD" } else { "STD" }}))
                .collect();
            json!({"code": format!("S{s:02}"), "name": format!("Block {s}"), "rows": rows})
        })
        .collect();
    body["title"] = json!("Stadium Night");
    body["seat_map"]["sections"] = json!(sections);
}

#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_200000_seat_map_opens_zooms_into_a_section_and_picks_a_seat() -> anyhow::Result<()> {
    let (scene, event) = Scene::with_event(stadium).await?;
    let app = &scene.app;
    let map = app.availability(event, None).await;
    anyhow::ensure!(
        crate::common::seat_letters(&map).len() == 200_000,
        "the event has 200,000 seats"
    );

    let b = scene.fan_on("alice", Viewport::DESKTOP, event).await?;
    let drawn = b
        .js(
            "const m = performance.getEntriesByName('map-drawn'); return m.length ? m[0].startTime : null;",
            vec![],
        )
        .await?;
    println!("200,000 seats: map-drawn at {drawn} ms after navigation");
    check_count(&b, "big-map-42", "#sections .section", 20, "section buttons").await?;
    b.screenshot("big-map-1-overview").await?;

    b.click("#sections .section[data-section=\"S07\"]").await?;
    b.wait_for_text("#map-scope", "Block 7", WAIT).await?;
    b.screenshot("big-map-2-section").await?;
    click_seat(&b, "S07-25-100").await?;
    b.wait_for("#selection .picked[data-seat=\"S07-25-100\"]", WAIT).await?;
    b.screenshot("big-map-3-picked").await?;

    b.click("#hold-button").await?;
    b.wait_for("#hold-panel", WAIT).await?;
    api_wait_letter(app, event, "S07-25-100", 'H').await?;

    let phone = scene.fan_on("bob", Viewport::PHONE, event).await?;
    wait_status(&phone, "big-map-phone-held", "S07-25-100", "H", WAIT).await?;
    phone.screenshot("big-map-4-phone-overview").await?;
    scene.finish([b, phone]).await
}

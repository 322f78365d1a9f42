//! Seat attributes and organizer holds on the fan's map: wheelchair spaces, companion seats,
//! restricted view and aisle seats are marked (and said, for the keyboard and screen readers),
//! the legend explains the marks, and withheld seats are drawn as not for sale, also when the
//! organizer withholds one while the fan looks.

use frontrow_browser::Viewport;
use serde_json::json;

use crate::common::ORGANIZER_KEY;
use crate::support::*;

#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn attributes_are_marked_and_withheld_seats_are_not_for_sale() -> anyhow::Result<()> {
    let (scene, event) = Scene::with_event(|body| {
        body["seat_map"]["sections"][0]["rows"][0] = json!({
            "name": "1", "seats": 10, "tier": "GOLD",
            "wheelchair": [1, 10], "companion": [2, 9], "aisle": [1, 10], "restricted_view": [5]
        });
    })
    .await?;
    let app = &scene.app;
    let withhold = |seats: serde_json::Value| {
        app.client
            .post(app.url(&format!("/events/{event}/withheld-seats")))
            .header("x-api-key", ORGANIZER_KEY)
            .json(&json!({"seats": seats, "label": "house seats"}))
            .send()
    };
    anyhow::ensure!(withhold(json!(["A-2-5", "A-2-6"])).await?.status() == 200);
    api_wait_letter(app, event, "A-2-6", 'W').await?;

    let b = scene.fan_on("alice", Viewport::DESKTOP, event).await?;
    map_ready(&b).await?;
    wait_status(&b, "attrs-withheld", "A-2-5", "W", WAIT).await?;
    let words = |seat: &'static str| {
        let b = &b;
        async move {
            let v = b
                .js("return window.frontrowMap.words(arguments[0]);", vec![json!(seat)])
                .await?;
            anyhow::Ok(v.as_str().unwrap_or_default().to_owned())
        }
    };
    let w1 = words("A-1-1").await?;
    b.check("attrs-words-1", w1.contains("wheelchair space, aisle"), &w1)
        .await?;
    let w2 = words("A-1-2").await?;
    b.check("attrs-words-2", w2.contains("companion seat"), &w2).await?;
    let w5 = words("A-1-5").await?;
    b.check("attrs-words-5", w5.contains("restricted view"), &w5).await?;
    let withheld = words("A-2-5").await?;
    b.check("attrs-words-w", withheld.ends_with("not on sale"), &withheld)
        .await?;
    for key in ["wheelchair", "companion", "restricted", "aisle"] {
        let text = shown_text(&b, &format!(".status-key .key-{key}")).await;
        b.check(
            &format!("attrs-legend-{key}"),
            text.is_ok(),
            format!("legend entry {key}"),
        )
        .await?;
    }
    // A picked seat is marked with a white tick, never with the companion seat's white square:
    // just up and left of the centre, inside the square's mark and clear of the tick, a picked
    // companion seat (A-1-2) is dark and an unpicked one (A-1-9) is white.
    click_seat(&b, "A-1-2").await?;
    let inside_the_square = (-0.08, -0.08);
    let dark = |[r, g, bl]: [u8; 3]| u32::from(r) + u32::from(g) + u32::from(bl) < 150;
    let picked = b
        .wait_until(
            "attrs-picked-mark",
            WAIT,
            "the picked seat is repainted dark",
            || async {
                let c = seat_colour(&b, "A-1-2", "A-1-3", inside_the_square).await?;
                Ok(dark(c).then_some(c))
            },
        )
        .await?;
    let companion = seat_colour(&b, "A-1-9", "A-1-10", inside_the_square).await?;
    b.check(
        "attrs-picked-not-companion",
        companion.iter().all(|&v| v > 230),
        format!("picked {picked:?}, companion {companion:?}"),
    )
    .await?;
    b.screenshot("attrs-2-picked-companion-seat").await?;
    b.js(
        "document.querySelector('.status-key').scrollIntoView({block: 'center'});",
        vec![],
    )
    .await?;
    b.screenshot("attrs-3-legend").await?;
    // A seat withheld while the fan looks turns unavailable through the live stream.
    anyhow::ensure!(withhold(json!(["A-1-6"])).await?.status() == 200);
    wait_status(&b, "attrs-live-withheld", "A-1-6", "W", WAIT).await?;
    b.screenshot("attrs-1-marks-and-withheld").await?;
    scene.finish([b]).await
}

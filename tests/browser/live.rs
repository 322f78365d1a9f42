//! Two fans on one event: a hold in one browser turns those seats held in the other within a
//! second (over the seat stream), and when the hold lapses (the server's clock moved past
//! `hold_until`) they turn available again in both.

use std::time::{Duration as StdDuration, Instant};

use chrono::Duration;
use frontrow_browser::Viewport;

use crate::support::*;

#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_hold_in_one_browser_shows_in_the_other_within_a_second_and_a_lapse_frees_it() -> anyhow::Result<()> {
    let (scene, event, alice) = Scene::with_fan("alice", Viewport::DESKTOP).await?;
    let app = &scene.app;
    let bob = scene.fan_on("bob", Viewport::PHONE, event).await?;
    let seats = ["A-2-5", "A-2-6"];
    for seat in seats {
        bob.check(
            "live-24",
            status(&bob, seat).await? == "A",
            format!("{seat} starts available"),
        )
        .await?;
        click_seat(&alice, seat).await?;
    }
    let deltas_before = bob.js("return window.frontrowMap.deltasApplied();", vec![]).await?;

    alice.click("#hold-button").await?;
    alice.wait_for("#hold-panel", WAIT).await?;
    // Alice's page has the writer's answer: from here Bob's map has one second.
    let acknowledged = Instant::now();
    for seat in seats {
        let left = StdDuration::from_secs(1).saturating_sub(acknowledged.elapsed());
        wait_status(&bob, "live-bob-sees-hold", seat, "H", left).await?;
    }
    let took = acknowledged.elapsed();
    let deltas_after = bob.js("return window.frontrowMap.deltasApplied();", vec![]).await?;
    let by_delta = deltas_after.as_u64() > deltas_before.as_u64();
    let message = format!("Bob's map changed without applying a stream delta ({deltas_before} -> {deltas_after})");
    bob.check("live-by-delta", by_delta, message).await?;
    println!("Bob's map showed Alice's hold {took:?} after her page had the answer");
    alice.screenshot("live-1-alice-holds").await?;
    bob.screenshot("live-2-bob-sees-held").await?;

    // The hold lapses: ten minutes on the server's clock, not in the browsers'.
    app.clock.advance(Duration::minutes(10) + Duration::seconds(1));
    for seat in seats {
        api_wait_letter(app, event, seat, 'A').await?;
        wait_status(&bob, "live-bob-sees-release", seat, "A", WAIT).await?;
        wait_status(&alice, "live-alice-sees-release", seat, "A", WAIT).await?;
    }
    bob.screenshot("live-3-bob-sees-released").await?;
    alice.screenshot("live-4-alice-after-lapse").await?;
    scene.finish([alice, bob]).await
}

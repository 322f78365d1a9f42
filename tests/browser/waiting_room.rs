//! The waiting room: two fans join before the onsale and see the pre-queue; at the onsale the
//! lottery places them (one shopper at a time: one is let in, the other waits with a place);
//! the admitted fan holds seats with the admission, the other is told to wait, keeps the place
//! across a reload.

use chrono::Duration;
use frontrow_browser::{Browser, Viewport};
use serde_json::json;

use crate::support::*;

async fn queue_status(b: &Browser) -> anyhow::Result<String> {
    Ok(b.attr("#queue-status", "data-status").await?.unwrap_or_default())
}

async fn wait_queue_status(b: &Browser, shot: &str, wanted: &[&str]) -> anyhow::Result<String> {
    b.wait_until(
        shot,
        WAIT,
        &format!("#queue-status[data-status] is one of {wanted:?}"),
        || async {
            let s = queue_status(b).await?;
            Ok(wanted.contains(&s.as_str()).then_some(s))
        },
    )
    .await
}

#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn fans_wait_in_the_pre_queue_get_places_by_lottery_and_only_the_admitted_one_reserves() -> anyhow::Result<()> {
    let scene = Scene::start().await?;
    let app = &scene.app;
    let event = app.create_event_from(&app.event_body(Duration::minutes(10))).await;
    let res = app
        .open_queue(event, json!({"max_size": 10, "max_shoppers": 1, "admission_secs": 300}))
        .await;
    anyhow::ensure!(res.status() == 200, "opening the queue: {}", res.text().await?);
    let opened: serde_json::Value = res.json().await?;
    app.availability(event, opened["position"].as_str()).await;

    let fans = [
        ("alice", scene.fan("alice", Viewport::DESKTOP).await?),
        ("bob", scene.fan("bob", Viewport::PHONE).await?),
    ];
    for (name, b) in &fans {
        b.goto(&app.url(&format!("/e/{event}"))).await?;
        b.wait_for("#queue-panel", WAIT).await?;
        watch_messages(b).await?;
        b.click("#queue-join").await?;
        wait_queue_status(b, &format!("queue-joined-{name}"), &["waiting"]).await?;
        b.wait_for_text("#queue-status", "pre-queue", WAIT).await?;
        b.screenshot(&format!("queue-1-pre-queue-{name}")).await?;
    }

    // The onsale: the writer draws the lottery and admits one fan.
    app.clock.advance(Duration::minutes(10));
    for (_, b) in &fans {
        advance_page_clock(b, Duration::minutes(10)).await?;
    }
    let placed = frontrow_browser::wait_until(WAIT, "one of the two fans is admitted", || async {
        for (i, (_, b)) in fans.iter().enumerate() {
            if queue_status(b).await? == "admitted" {
                return Ok(Some(i));
            }
        }
        Ok(None)
    })
    .await;
    let placed = match placed {
        Ok(i) => i,
        Err(e) => {
            fans[1].1.screenshot("timeout-queue-nobody-admitted-bob").await?;
            return Err(fans[0].1.fail_with_screenshot("queue-nobody-admitted-alice", e).await);
        }
    };
    let (in_name, fan_in) = (&fans[placed].0, &fans[placed].1);
    let (out_name, fan_out) = (&fans[1 - placed].0, &fans[1 - placed].1);
    wait_queue_status(fan_out, "queue-other-waits", &["waiting"]).await?;
    let ahead = fan_out
        .wait_until("queue-ahead", WAIT, "#queue-ahead shows a number", || async {
            let t = fan_out.text("#queue-ahead").await?;
            Ok(t.trim().parse::<u64>().ok())
        })
        .await?;
    let countdown = shown_text(fan_in, "#admission-countdown").await?;
    fan_in
        .check(
            "waiting-room-83",
            countdown.contains(':'),
            format!("admission countdown {countdown:?}"),
        )
        .await?;
    fan_in.screenshot(&format!("queue-2-admitted-{in_name}")).await?;
    fan_out.screenshot(&format!("queue-3-waiting-{out_name}")).await?;

    // The admitted fan reserves with the admission.
    map_ready(fan_in).await?;
    click_seat(fan_in, "A-1-1").await?;
    fan_in.click("#hold-button").await?;
    fan_in.wait_for("#hold-panel", WAIT).await?;
    api_wait_letter(app, event, "A-1-1", 'H').await?;
    fan_in.screenshot(&format!("queue-4-admitted-holds-{in_name}")).await?;

    // The other is told to wait, and a reload keeps the place.
    map_ready(fan_out).await?;
    click_seat(fan_out, "A-1-2").await?;
    fan_out.click("#hold-button").await?;
    let sentence = wait_problem(fan_out, "queue-told-to-wait", "admission-required").await?;
    fan_out
        .check(
            "waiting-room-100",
            sentence.to_lowercase().contains("wait"),
            format!("{sentence:?} does not tell the fan to wait"),
        )
        .await?;
    fan_out
        .check(
            "waiting-room-101",
            app.seat_letter(event, "A-1-2").await == 'A',
            "a fan without admission held a seat",
        )
        .await?;
    // The message is read while the fan can still act: it does not cover the button they just
    // pressed (on a phone the panel with it is at the bottom of the screen).
    fan_out
        .check(
            "waiting-room-102",
            !boxes_overlap(fan_out, "#message", "#hold-button").await?,
            "the message covers the Hold button",
        )
        .await?;
    fan_out.screenshot(&format!("queue-5-told-to-wait-{out_name}")).await?;
    fan_out.client.refresh().await?;
    wait_queue_status(fan_out, "queue-after-reload", &["waiting"]).await?;
    let after = fan_out
        .wait_until(
            "queue-ahead-reload",
            WAIT,
            "#queue-ahead shows a number after a reload",
            || async {
                let t = fan_out.text("#queue-ahead").await?;
                Ok(t.trim().parse::<u64>().ok())
            },
        )
        .await?;
    fan_out
        .check(
            "waiting-room-111",
            after <= ahead,
            format!("the reload lost the place: {ahead} ahead before, {after} after"),
        )
        .await?;
    fan_out.screenshot(&format!("queue-6-after-reload-{out_name}")).await?;
    scene.finish(fans.map(|(_, b)| b)).await
}

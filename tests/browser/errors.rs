//! Errors the fan sees as sentences: a seat taken by someone else right before the fan's hold
//! (the page says so and shows it held), and a hold that lapsed (the page says the seats were
//! released; the server's clock and the page's both move on). `#message[data-problem]` names
//! the problem; its text is never JSON.

use chrono::Duration;
use frontrow_browser::Viewport;

use crate::support::*;

#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_seat_taken_under_the_cursor_is_explained_and_shown_held() -> anyhow::Result<()> {
    seat_taken(Viewport::DESKTOP, "errors-1-seat-taken").await
}

#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_seat_taken_on_a_phone_is_explained_without_hiding_the_hold_button() -> anyhow::Result<()> {
    seat_taken(Viewport::PHONE, "errors-1-seat-taken-phone").await
}

/// Alice picks two seats, a rival takes one through the API, Alice presses Hold: the page says
/// the seat was taken (from its live stream, or from Hold's answer if that comes first), shows
/// it held and keeps her other pick. No sentence it shows covers the Hold button (at the bottom
/// of a phone's screen): the press itself would fail if one did.
async fn seat_taken(viewport: Viewport, shot: &str) -> anyhow::Result<()> {
    let (scene, event, b) = Scene::with_fan("alice", viewport).await?;
    let app = &scene.app;
    for seat in ["B-1-2", "B-1-3"] {
        click_seat(&b, seat).await?;
    }
    // Another customer takes B-1-3 through the API right before Alice presses Hold.
    let res = app.reserve_seats("rival", event, &["B-1-3"]).await;
    anyhow::ensure!(res.status() == 201, "the rival's hold: {}", res.text().await?);
    b.click("#hold-button").await?;

    let sentence = wait_problem(&b, "errors-taken", "seats-unavailable").await?;
    println!("seats taken: {sentence:?}");
    wait_status(&b, "errors-taken-drawn", "B-1-3", "H", WAIT).await?;
    b.check(
        "errors-29",
        !selected(&b, "B-1-3").await?,
        "the taken seat is still picked",
    )
    .await?;
    b.check(
        "errors-message-clear-of-hold",
        !boxes_overlap(&b, "#message", "#hold-button").await?,
        "the message covers the Hold button",
    )
    .await?;
    b.screenshot(shot).await?;
    // Nothing of Alice's was held in the rival's seat.
    b.check(
        "errors-rival-kept",
        app.seat_letter(event, "B-1-3").await == 'H',
        "the rival lost the seat",
    )
    .await?;
    scene.finish([b]).await
}

#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_lapsed_hold_is_explained_and_its_seats_are_free_again() -> anyhow::Result<()> {
    let (scene, _event, b) = Scene::with_fan("alice", Viewport::PHONE).await?;
    let app = &scene.app;
    // Not A-1-9: that would leave A-1-10 alone, which the no-orphan rule refuses.
    click_seat(&b, "A-1-8").await?;
    b.click("#hold-button").await?;
    b.wait_for("#hold-panel", WAIT).await?;
    // The map's live words for the seat under the cursor follow its state.
    b.wait_for_text("#map-live", "seat 8", WAIT).await?;
    b.wait_for_text("#map-live", "held for you", WAIT).await?;
    b.screenshot("errors-2-held-phone").await?;

    // Ten minutes pass, for the server and for the fan.
    let lapse = Duration::minutes(10) + Duration::seconds(1);
    app.clock.advance(lapse);
    advance_page_clock(&b, lapse).await?;
    let sentence = wait_problem(&b, "errors-expired", "hold-expired").await?;
    b.check(
        "errors-53",
        sentence.to_lowercase().contains("released"),
        format!("{sentence:?} does not say the seats were released"),
    )
    .await?;
    println!("hold expired: {sentence:?}");
    wait_status(&b, "errors-expired-drawn", "A-1-8", "A", WAIT).await?;
    let panel_hidden = b
        .js("return document.getElementById('hold-panel').hidden;", vec![])
        .await?;
    b.check(
        "errors-57",
        panel_hidden == true,
        "the hold panel is still shown after the lapse",
    )
    .await?;
    let words = b.wait_for_text("#map-live", ", available", WAIT).await?;
    b.check(
        "errors-words-after-lapse",
        words.contains("seat 8") && !words.contains("your pick") && !words.contains("held"),
        format!("the live words still describe the lapsed hold: {words:?}"),
    )
    .await?;
    b.screenshot("errors-3-hold-expired-phone").await?;
    scene.finish([b]).await
}

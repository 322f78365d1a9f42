//! The whole purchase as a fan makes it: search with a typo, open the event, pick two seats by
//! clicking the canvas, hold, pay (simulated provider), see the booking on "My bookings", and
//! cancel it there.

use frontrow_browser::Viewport;
use serde_json::json;

use crate::support::*;

#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_fan_finds_an_event_with_a_typo_picks_two_seats_pays_sees_the_booking_and_cancels_it() -> anyhow::Result<()> {
    let (scene, event) = Scene::with_event(|body| {
        body["title"] = json!("Arctic Monkeys: The Car Tour");
        body["artist"] = json!("Arctic Monkeys");
    })
    .await?;
    let app = &scene.app;
    wait_searchable(app, "arctic monkys", event).await?;

    let b = scene.fan("alice", Viewport::DESKTOP).await?;
    b.type_into("#search-input", "arctic monkys").await?;
    let hit = format!("#results a.result[data-event-id=\"{event}\"]");
    // The catalogue lists the event too: the search's answer is the hit with a highlight.
    b.wait_for(&format!("{hit} mark"), WAIT).await?;
    b.wait_for_text("#results-status", "1 event", WAIT).await?;
    b.screenshot("checkout-1-search").await?;

    b.click(&hit).await?;
    map_ready(&b).await?;
    let title = b.text("#event-title").await?;
    b.check(
        "checkout-33",
        title.contains("Arctic Monkeys"),
        format!("event title: {title:?}"),
    )
    .await?;
    b.screenshot("checkout-2-event").await?;

    for seat in ["A-1-3", "A-1-4"] {
        click_seat(&b, seat).await?;
    }
    b.wait_for("#selection .picked[data-seat=\"A-1-4\"]", WAIT).await?;
    check_count(&b, "checkout-41", "#selection .picked", 2, "seats listed as picked").await?;
    b.wait_for_text("#total", "200", WAIT).await?;
    b.screenshot("checkout-3-picked").await?;

    b.click("#hold-button").await?;
    b.wait_for("#hold-panel", WAIT).await?;
    let countdown = b.wait_for_text("#hold-countdown", ":", WAIT).await?;
    let (mm, ss) = countdown.trim().split_once(':').unwrap_or_default();
    let about_ten_minutes = mm.len() == 2 && ss.len() == 2 && (mm, ss) <= ("10", "00") && mm >= "09";
    b.check(
        "checkout-countdown",
        about_ten_minutes,
        format!("hold countdown {countdown:?}, expected about 10:00"),
    )
    .await?;
    for seat in ["A-1-3", "A-1-4"] {
        api_wait_letter(app, event, seat, 'H').await?;
    }
    b.screenshot("checkout-4-held").await?;

    b.click("#pay-button").await?;
    b.wait_for("#confirmation", WAIT).await?;
    let booking = b
        .wait_until("checkout-booking-id", WAIT, "#booking-id is filled", || async {
            let id = b.text("#booking-id").await?;
            Ok((!id.trim().is_empty()).then(|| id.trim().to_owned()))
        })
        .await?;
    let reservation = scene
        .api_as(&b, &format!("/events/{event}/reservations/{booking}"))
        .await?;
    b.check(
        "checkout-66",
        reservation["status"] == "booked",
        format!("the reservation is {reservation}"),
    )
    .await?;
    for seat in ["A-1-3", "A-1-4"] {
        wait_status(&b, "checkout-booked", seat, "B", WAIT).await?;
    }
    let amount = b.text("#confirmation-amount").await.unwrap_or_default();
    let first_seat = b.text("#confirmation-seats li").await?;
    b.screenshot("checkout-5-confirmed").await?;

    // The confirmation's link names the payment's position, so "My bookings" waits until the
    // ledger (written at most once a second under load) lists the booking.
    let link = b.attr("#my-bookings-link", "href").await?.unwrap_or_default();
    b.check(
        "checkout-my-bookings-link",
        link.contains("/me?after="),
        format!("the confirmation links to {link:?}"),
    )
    .await?;
    b.click("#my-bookings-link").await?;
    let row = format!("#bookings .booking[data-reservation-id=\"{booking}\"]");
    let text = shown_text(&b, &row).await?;
    b.check(
        "checkout-76",
        text.contains("200"),
        format!("the booking shows no amount of 200: {text:?} (confirmation said {amount:?})"),
    )
    .await?;
    // The seats are named as the confirmation named them: by the section's name on the map.
    b.check(
        "checkout-seat-names",
        !first_seat.trim().is_empty() && text.contains(first_seat.trim()),
        format!("the booking {text:?} does not name the confirmation's seat {first_seat:?}"),
    )
    .await?;
    b.wait_for_text("#bookings-status", "1 booking", WAIT).await?;
    b.screenshot("checkout-6-my-bookings").await?;

    // Cancel from "My bookings": the row says so at once and the seats are for sale again; the
    // counts the page reads back (`?after=` the cancellation) say so too.
    b.js("window.confirm = () => true;", vec![]).await?;
    b.click(&format!("{row} .cancel-button")).await?;
    let cancelled = format!("{row} .booking-status[data-status=\"cancelled\"]");
    b.wait_for(&cancelled, WAIT).await?;
    for seat in ["A-1-3", "A-1-4"] {
        api_wait_letter(app, event, seat, 'A').await?;
    }
    // The count is written by the read-back only: "1 cancelled booking" (it said "1 booking"
    // before) means the ledger's answer came.
    b.wait_for_text("#bookings-status", "1 cancelled booking", WAIT).await?;
    b.wait_for(&cancelled, WAIT).await?;
    let button_gone = b
        .js(
            "return document.querySelector(arguments[0]) === null;",
            vec![json!(format!("{row} .cancel-button"))],
        )
        .await?;
    b.check(
        "checkout-cancelled",
        button_gone == json!(true),
        "the cancelled booking still offers to cancel",
    )
    .await?;
    b.screenshot("checkout-7-cancelled").await?;
    scene.finish([b]).await
}

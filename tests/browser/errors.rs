//! Errors the fan sees as sentences: a seat taken by someone else right before the fan's hold
//! (the page says so and shows it held), a hold that lapsed (the page says the seats were
//! released; the server's clock and the page's both move on), and an event that has started
//! (before the page was opened, or while it is open). `#message[data-problem]` names
//! the problem; its text is never JSON.

use chrono::Duration;
use frontrow_browser::{Browser, Viewport};
use frontrow_schema::EventId;

use crate::common::TestApp;
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

/// A Hold turned away for a moment (`429` with `Retry-After`: Alice's rate of one write a second
/// is spent) is sent again by the page itself, with the same key: Alice sees the wait counted
/// down, then her hold, drawn as hers; the server holds her two seats once. (The same path
/// serves a `503` with `Retry-After`, e.g. `overloaded`.)
#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_hold_turned_away_for_a_moment_is_sent_again_by_the_page() -> anyhow::Result<()> {
    let scene = Scene::start_with(|s| {
        s.limits.customer_per_second = 1;
        s.limits.customer_burst = 1;
    })
    .await?;
    let app = &scene.app;
    let event = app.create_event_changed(Duration::minutes(-1), |_| {}).await;
    let b = scene.fan_on("alice", Viewport::DESKTOP, event).await?;
    for seat in ["A-1-1", "A-1-2"] {
        click_seat(&b, seat).await?;
    }
    // Alice's one write of this second goes elsewhere (releasing a reservation she does not
    // have), and Hold is pressed as soon as it is answered, well inside the second.
    let spent = b
        .js(
            "const token = sessionStorage.getItem('frontrow.token');
             return fetch(`/events/${arguments[0]}/reservations/00000000-0000-4000-8000-000000000000/release`,
                 { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Idempotency-Key': 'spend-the-second' } })
               .then((r) => { document.getElementById('hold-button').click(); return r.status; });",
            vec![serde_json::json!(event.to_string())],
        )
        .await?;
    b.check(
        "errors-busy-spent",
        spent == 404,
        format!("the write that spends Alice's second answered {spent}, not 404"),
    )
    .await?;
    wait_retry_notice(&b, "errors-busy-notice", "rate-limited").await?;
    b.screenshot("errors-4-busy-retrying").await?;
    b.wait_for("#hold-panel", WAIT).await?;
    let retry_over = b
        .js(
            "const m = document.getElementById('message');
             return m.hidden || m.dataset.retry === undefined;",
            vec![],
        )
        .await?;
    b.check(
        "errors-busy-cleared",
        retry_over == true,
        "the retry notice is still shown after the hold",
    )
    .await?;
    check_held(&b, app, event, 2, "errors-busy-once").await?;
    // Her seats are drawn as hers: a dark tick and frame on white, not the struck-through
    // square of someone else's hold.
    // Inside the frame, up and left of the tick: white.
    let inside = seat_colour(&b, "A-1-1", "A-1-2", (-0.16, -0.2)).await?;
    let tick = seat_colour(&b, "A-1-1", "A-1-2", (-0.064, 0.176)).await?;
    let frame = seat_colour(&b, "A-1-1", "A-1-2", (-0.34, 0.0)).await?;
    let light = |c: [u8; 3]| c.iter().all(|&v| v > 220);
    let dark = |c: [u8; 3]| c.iter().all(|&v| v < 90);
    b.check(
        "errors-busy-drawn-as-hers",
        light(inside) && dark(tick) && dark(frame),
        format!("A-1-1 is not drawn as held for Alice: inside {inside:?}, tick {tick:?}, frame {frame:?}"),
    )
    .await?;
    b.screenshot("errors-5-held-after-retry").await?;
    scene.finish([b]).await
}

/// The server ends a hold by its own clock; a browser whose clock is behind still counts down.
/// The seat stream's news that the hold's seats are free again ends the hold on the page too:
/// the sentence, the panel gone, the seat available, while the page's countdown still had most
/// of ten minutes to go.
#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_hold_the_server_ended_ends_on_the_page_whatever_its_clock_says() -> anyhow::Result<()> {
    let (scene, _event, b) = Scene::with_fan("alice", Viewport::DESKTOP).await?;
    let app = &scene.app;
    click_seat(&b, "A-1-8").await?;
    b.click("#hold-button").await?;
    b.wait_for("#hold-panel", WAIT).await?;
    let before = b.text("#hold-countdown").await?;
    // Ten minutes pass for the server only.
    app.clock.advance(Duration::minutes(10) + Duration::seconds(1));
    let sentence = wait_problem(&b, "errors-ended-by-server", "hold-expired").await?;
    println!("hold ended by the server (countdown was {before}): {sentence:?}");
    wait_status(&b, "errors-ended-drawn", "A-1-8", "A", WAIT).await?;
    let page = b
        .js(
            "return { panel: document.getElementById('hold-panel').hidden,
                      selection: document.getElementById('selection-panel').hidden,
                      left: document.getElementById('hold-countdown').textContent };",
            vec![],
        )
        .await?;
    b.check(
        "errors-ended-panels",
        page["panel"] == true && page["selection"] == false,
        format!("the hold panel is still up after the server ended the hold: {page}"),
    )
    .await?;
    b.check(
        "errors-ended-early",
        before.starts_with("09:") || before.starts_with("10:"),
        format!("the page's countdown read {before:?} when the hold was made"),
    )
    .await?;
    b.screenshot("errors-6-ended-by-server").await?;
    scene.finish([b]).await
}

/// Hold's answer is lost on the way back (the server held the seats; the page saw the
/// connection fail): the page sends the hold again by itself with the same key, and the server
/// answers it with the reservation it already made. Two requests, one hold of two seats.
#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_hold_whose_answer_is_lost_is_sent_again_and_held_once() -> anyhow::Result<()> {
    let (scene, event, b) = Scene::with_fan("alice", Viewport::DESKTOP).await?;
    let app = &scene.app;
    for seat in ["A-1-1", "A-1-2"] {
        click_seat(&b, seat).await?;
    }
    // The page's first reservation request reaches the server, but its answer never reaches
    // the page: it sees what a dropped connection looks like to fetch.
    b.js(
        "window.frontrowHolds = [];
         const real = window.fetch.bind(window);
         window.fetch = async (url, init) => {
           if (!String(url).endsWith('/reservations')) return real(url, init);
           window.frontrowHolds.push(init.headers['Idempotency-Key']);
           const answer = await real(url, init);
           if (window.frontrowHolds.length === 1) throw new TypeError('Failed to fetch');
           return answer;
         };",
        vec![],
    )
    .await?;
    b.click("#hold-button").await?;
    wait_retry_notice(&b, "errors-lost-notice", "offline").await?;
    b.wait_for("#hold-panel", WAIT).await?;
    let keys = b.js("return window.frontrowHolds;", vec![]).await?;
    let keys = keys.as_array().cloned().unwrap_or_default();
    b.check(
        "errors-lost-same-key",
        keys.len() == 2 && keys[0] == keys[1] && keys[0].is_string(),
        format!("the hold was not sent twice with one key: {keys:?}"),
    )
    .await?;
    check_held(&b, app, event, 2, "errors-lost-once").await?;
    let listed = b.text("#hold-seats").await?;
    b.check(
        "errors-lost-listed",
        listed.contains("row 1, seat 1") && listed.contains("row 1, seat 2"),
        format!("the hold panel lists {listed:?}"),
    )
    .await?;
    scene.finish([b]).await
}

/// An event that has started is shown, but its page says sales are closed and offers nothing to
/// pick, hold or queue for: a click on a free seat says why instead of picking it.
#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_started_event_says_its_sales_are_closed_and_picks_nothing() -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    let (scene, event) = Scene::with_event(|body| {
        body["starts_at"] = serde_json::json!(now - Duration::hours(1));
        body["onsale_at"] = serde_json::json!(now - Duration::days(2));
    })
    .await?;
    let b = scene.fan_on("erin", Viewport::DESKTOP, event).await?;
    b.wait_for_text("#event-onsale", "This event has started: sales are closed.", WAIT)
        .await?;
    check_sales_closed(&b, "closed", "A-1-1").await?;
    b.screenshot("errors-started-event").await?;
    scene.finish([b]).await
}

/// The event starts while Erin's page is open and her seats are held, not yet paid for: within a
/// second the page says its sales are closed, takes the hold and every panel to pick, hold, pay
/// or queue away, tells her the hold can no longer be paid, and picks nothing more; the server
/// refuses a hold now too, for the same reason.
#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn an_event_that_starts_while_its_page_is_open_closes_its_sales_there() -> anyhow::Result<()> {
    // The hold (10 minutes) outlasts the start, so what ends it on the page is the start.
    let to_start = Duration::minutes(2);
    let (scene, event) = Scene::with_event(|body| {
        body["starts_at"] = serde_json::json!(chrono::Utc::now() + to_start);
    })
    .await?;
    let app = &scene.app;
    let b = scene.fan_on("erin", Viewport::DESKTOP, event).await?;
    for seat in ["A-1-1", "A-1-2"] {
        click_seat(&b, seat).await?;
    }
    b.click("#hold-button").await?;
    b.wait_for("#hold-panel", WAIT).await?;
    b.screenshot("errors-before-start").await?;

    let past_start = to_start + Duration::seconds(1);
    app.clock.advance(past_start);
    advance_page_clock(&b, past_start).await?;
    b.wait_for_text("#event-onsale", "This event has started: sales are closed.", WAIT)
        .await?;
    let sentence = wait_problem(&b, "errors-started-open", "sales-closed").await?;
    b.check(
        "started-open-told",
        sentence.contains("held seats were paid for"),
        format!("{sentence:?} does not say the hold can no longer be paid"),
    )
    .await?;
    check_sales_closed(&b, "started-open", "A-1-5").await?;
    let res = app.reserve_seats("frank", event, &["B-1-1"]).await;
    let status = res.status();
    let body = res.text().await?;
    b.check(
        "started-open-server",
        status == 409 && body.contains("sales-closed"),
        format!("a hold after the start was answered {status}: {body}"),
    )
    .await?;
    b.screenshot("errors-started-while-open").await?;
    scene.finish([b]).await
}

/// Checks that the event page shows no panel to pick, hold, pay or queue (nor a confirmation)
/// and that a click on the free seat `free` picks nothing but says sales have closed.
async fn check_sales_closed(b: &Browser, shot: &str, free: &str) -> anyhow::Result<()> {
    let hidden = b
        .js(
            "return ['selection-panel', 'hold-panel', 'best-form', 'queue-panel', 'confirmation']
               .every((id) => document.getElementById(id).hidden);",
            vec![],
        )
        .await?;
    b.check(
        &format!("{shot}-panels"),
        hidden == serde_json::json!(true),
        "a panel to pick, hold, pay or queue is shown",
    )
    .await?;
    let center = b
        .js(
            "return window.frontrowMap.seatCenter(arguments[0]);",
            vec![serde_json::json!(free)],
        )
        .await?;
    let (x, y) = (center["x"].as_f64(), center["y"].as_f64());
    b.click_at(x.unwrap_or_default(), y.unwrap_or_default()).await?;
    b.wait_for_text("#map-live", "Sales for this event have closed", WAIT)
        .await?;
    b.check(
        &format!("{shot}-no-pick"),
        !selected(b, free).await?,
        format!("{free} was picked by a click at {center}"),
    )
    .await
}

/// Waits for the page's notice that it sends a call refused with `problem` again by itself.
async fn wait_retry_notice(b: &Browser, shot: &str, problem: &str) -> anyhow::Result<()> {
    let notice = wait_problem(b, shot, problem).await?;
    println!("while the page waits: {notice:?}");
    b.check(
        shot,
        notice.contains("Trying again for you in"),
        format!("the notice does not say the page tries again: {notice:?}"),
    )
    .await
}

/// Checks that the server holds exactly `seats` seats of `event` (a retried hold held once).
async fn check_held(b: &Browser, app: &TestApp, event: EventId, seats: u32, shot: &str) -> anyhow::Result<()> {
    let held = app.availability(event, None).await.seats.held;
    b.check(
        shot,
        held == seats,
        format!("{held} seats are held where one hold of {seats} was asked for"),
    )
    .await
}

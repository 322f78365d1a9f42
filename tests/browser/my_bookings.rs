//! My bookings a page at a time: a fan with more bookings than a page holds sees the newest
//! twenty with all of them counted, and the rest after "Show more bookings", none twice; a
//! cancel there keeps the pages she opened.

use std::collections::BTreeSet;

use frontrow_browser::Viewport;
use serde_json::json;

use crate::common::{CustomerBookings, WebhookAnswer, get_until, ok};
use crate::support::*;

/// The booking cards on the page, by reservation id, in the page's order.
async fn shown(b: &frontrow_browser::Browser) -> anyhow::Result<Vec<String>> {
    data_of(b, "#bookings .booking", "reservationId").await
}

#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn a_fan_with_more_bookings_than_a_page_sees_the_rest_on_request() -> anyhow::Result<()> {
    let (scene, event) = Scene::with_event(|body| body["max_seats_per_customer"] = json!(26)).await?;
    let app = &scene.app;
    // 23 bookings of a seat each, all at one instant of the test's clock: the pages part ties.
    let seats = (1..=10)
        .map(|n| format!("A-1-{n}"))
        .chain((1..=10).map(|n| format!("A-2-{n}")))
        .chain((1..=3).map(|n| format!("B-1-{n}")));
    let mut booked = BTreeSet::new();
    for seat in seats {
        let held = app.reserve_seats_ok("carol", event, &[&seat]).await;
        let rid = held.reservation.reservation_id;
        let paid: WebhookAnswer = ok(app.demo_pay("carol", event, &rid, None).await).await;
        anyhow::ensure!(paid.outcome == "booked", "{seat}: {}", paid.outcome);
        booked.insert(rid.to_string());
    }
    let bearer = format!("Bearer {}", app.token("carol"));
    let all_in_ledger = |v: &CustomerBookings| v.booked_count == 23;
    get_until(app, "/me/bookings", ("authorization", &bearer), all_in_ledger).await;

    let b = scene.fan("carol", Viewport::DESKTOP).await?;
    b.goto(&app.url("/me")).await?;
    b.wait_for_text("#bookings-status", "23 bookings", WAIT).await?;
    check_count(
        &b,
        "bookings-page-1",
        "#bookings .booking",
        20,
        "bookings on the first page",
    )
    .await?;
    b.wait_for("#more-bookings", WAIT).await?;
    b.js(
        "document.getElementById('more-bookings').scrollIntoView({ block: 'center' });",
        vec![],
    )
    .await?;
    b.screenshot("bookings-1-first-page").await?;

    b.click("#more-bookings").await?;
    b.wait_until("bookings-page-2", WAIT, "the second page under the first", || async {
        Ok((shown(&b).await?.len() == 23).then_some(()))
    })
    .await?;
    let ids = shown(&b).await?;
    let distinct: BTreeSet<String> = ids.iter().cloned().collect();
    b.check(
        "bookings-all",
        distinct == booked && ids.len() == booked.len(),
        format!(
            "{} cards, {} distinct, {} booked",
            ids.len(),
            distinct.len(),
            booked.len()
        ),
    )
    .await?;
    check_count(
        &b,
        "bookings-no-more",
        "#more-bookings",
        0,
        "buttons for more after the last page",
    )
    .await?;
    // The keyboard's place moved from the button to the first booking it added.
    let focused = b
        .js(
            "return document.activeElement.closest('.booking')?.dataset.reservationId ?? null;",
            vec![],
        )
        .await?;
    b.check(
        "bookings-focus",
        focused == json!(ids[20]),
        format!("focus on {focused}, expected the 21st booking {}", ids[20]),
    )
    .await?;
    b.wait_for_text("#bookings-status", "23 bookings", WAIT).await?;
    b.js("window.scrollTo(0, document.body.scrollHeight);", vec![]).await?;
    b.screenshot("bookings-2-all").await?;

    // A cancel on the second page changes that card and the counts, and leaves the pages shown.
    let card = format!(".booking[data-reservation-id=\"{}\"]", ids[21]);
    b.js("window.confirm = () => true;", vec![]).await?;
    b.click(&format!("{card} .cancel-button")).await?;
    b.wait_for(&format!("{card} .booking-status[data-status=\"cancelled\"]"), WAIT)
        .await?;
    b.wait_for_text("#bookings-status", "22 bookings, 1 cancelled", WAIT)
        .await?;
    let after_cancel = shown(&b).await?;
    b.check(
        "bookings-kept",
        after_cancel == ids,
        format!("{} cards after the cancel, {} before", after_cancel.len(), ids.len()),
    )
    .await?;
    b.screenshot("bookings-3-cancelled-on-page-2").await?;
    scene.finish([b]).await
}

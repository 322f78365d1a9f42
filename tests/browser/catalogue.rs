//! What is on sale, a page at a time: the home page shows the soonest twenty events with all of
//! them counted and the rest after "Show more events"; the city and date filters are the
//! server's (a city in any case, the dates inclusive), a search's hits page the same way, and an
//! event that has started is no longer listed.

use std::collections::BTreeSet;

use chrono::Duration;
use frontrow_browser::{Browser, Viewport};
use frontrow_schema::EventId;
use serde_json::json;

use crate::support::*;

/// The result cards on the page, by event id, in the page's order.
async fn shown(b: &Browser) -> anyhow::Result<Vec<String>> {
    data_of(b, "#results a.result", "eventId").await
}

/// Checks that no "Show more events" is left, and saves the end of the list as `shot`.
async fn the_last_page(b: &Browser, shot: &str) -> anyhow::Result<()> {
    check_count(b, shot, "#more-events", 0, "buttons for more after the last page").await?;
    b.js("window.scrollTo(0, document.body.scrollHeight);", vec![]).await?;
    b.screenshot(shot).await?;
    Ok(())
}

/// Waits until `#results-status` says exactly `text` and the cards are `ids`, in that order.
async fn wait_list(b: &Browser, shot: &str, text: &str, ids: &[String]) -> anyhow::Result<()> {
    b.wait_until(
        shot,
        WAIT,
        &format!("{text:?} and {} results in order", ids.len()),
        || async {
            let status = b.text("#results-status").await?;
            Ok((status == text && shown(b).await? == ids).then_some(()))
        },
    )
    .await
}

/// Sets a date filter as a fan's date picker does: the value, then a `change` event.
async fn pick_date(b: &Browser, css: &str, day: &str) -> anyhow::Result<()> {
    b.js(
        "const e = document.querySelector(arguments[0]); e.value = arguments[1]; \
         e.dispatchEvent(new Event('change', { bubbles: true }));",
        vec![json!(css), json!(day)],
    )
    .await?;
    Ok(())
}

/// Clicks "Show more events" and checks that the keyboard's focus went to the first result it
/// added (the `at`th, counted from 0).
async fn show_more(b: &Browser, shot: &str, at: usize) -> anyhow::Result<()> {
    b.js(
        "document.getElementById('more-events').scrollIntoView({ block: 'center' });",
        vec![],
    )
    .await?;
    b.screenshot(&format!("{shot}-button")).await?;
    b.click("#more-events").await?;
    b.wait_until(shot, WAIT, "more results after the button", || async {
        Ok((shown(b).await?.len() > at).then_some(()))
    })
    .await?;
    let focused = b
        .js("return document.activeElement?.dataset?.eventId ?? null;", vec![])
        .await?;
    let ids = shown(b).await?;
    b.check(
        &format!("{shot}-focus"),
        focused == json!(ids[at]),
        format!("focus on {focused}, expected result {} {}", at + 1, ids[at]),
    )
    .await
}

#[tokio::test]
#[ignore = "needs chromium: run the README's test command"]
async fn what_is_on_sale_is_read_a_page_at_a_time_and_filtered_on_the_server() -> anyhow::Result<()> {
    let scene = Scene::start().await?;
    let app = &scene.app;
    // 25 nights on 25 days, in two cities; created latest first, listed soonest first.
    let mut events: Vec<(String, &str, EventId)> = Vec::new();
    for i in (0..25i64).rev() {
        let city = if i % 2 == 0 { "Utrecht" } else { "Zürich" };
        let starts_at = app.now() + Duration::days(i + 2);
        let event = app
            .create_event_changed(Duration::minutes(-1), |body| {
                body["title"] = json!(format!("Night {:02}", i + 1));
                body["city"] = json!(city);
                body["starts_at"] = json!(starts_at);
            })
            .await;
        events.push((starts_at.format("%Y-%m-%d").to_string(), city, event));
    }
    events.sort();
    let ids = |keep: &dyn Fn(&(String, &str, EventId)) -> bool| -> Vec<String> {
        events.iter().filter(|e| keep(e)).map(|e| e.2.to_string()).collect()
    };
    let all = ids(&|_| true);

    let b = scene.fan("dana", Viewport::DESKTOP).await?;
    wait_list(&b, "catalogue-first-page", "25 events on sale", &all[..20]).await?;
    b.screenshot("catalogue-1-first-page").await?;
    show_more(&b, "catalogue-more", 20).await?;
    wait_list(&b, "catalogue-all", "25 events on sale", &all).await?;
    the_last_page(&b, "catalogue-2-all").await?;

    // The city in another case, then dates too: the server filters, and the list starts again.
    b.type_into("#city-filter", "ZÜRICH").await?;
    let zurich = ids(&|e| e.1 == "Zürich");
    wait_list(&b, "catalogue-city", "12 events on sale", &zurich).await?;
    check_count(
        &b,
        "catalogue-city-one-page",
        "#more-events",
        0,
        "buttons for more on one page",
    )
    .await?;
    let (from, to) = (events[4].0.clone(), events[13].0.clone());
    pick_date(&b, "#from-filter", &from).await?;
    pick_date(&b, "#to-filter", &to).await?;
    let dated = ids(&|e| e.1 == "Zürich" && e.0 >= from && e.0 <= to);
    anyhow::ensure!(dated.len() == 5, "{from}..={to}: {dated:?}");
    wait_list(&b, "catalogue-dates", "5 events on sale", &dated).await?;
    b.screenshot("catalogue-3-filtered").await?;
    // The filters are in the address: the page opened there shows the same.
    let here = b.js("return location.pathname + location.search;", vec![]).await?;
    b.goto(&app.url(here.as_str().unwrap_or("/"))).await?;
    wait_list(&b, "catalogue-reopened", "5 events on sale", &dated).await?;

    // A search's hits are read a page at a time too (search pages by number).
    b.goto(&app.url("/")).await?;
    frontrow_browser::wait_until(WAIT, "all 25 events searchable", || async {
        let found: serde_json::Value = app.client.get(app.url("/search?q=night")).send().await?.json().await?;
        Ok((found["total"] == 25).then_some(()))
    })
    .await?;
    b.type_into("#search-input", "night").await?;
    b.wait_until("search-first-page", WAIT, "20 of 25 hits", || async {
        let status = b.text("#results-status").await?;
        Ok((status == "25 events match “night”" && shown(&b).await?.len() == 20).then_some(()))
    })
    .await?;
    show_more(&b, "search-more", 20).await?;
    let hits = shown(&b).await?;
    let distinct: BTreeSet<&String> = hits.iter().collect();
    b.check(
        "search-all",
        hits.len() == 25 && distinct == all.iter().collect(),
        format!("{} hits, {} distinct, of 25 events", hits.len(), distinct.len()),
    )
    .await?;
    the_last_page(&b, "catalogue-4-search-all").await?;

    // An event that has started is no longer on sale: three days and an hour later by the
    // page's clock, the first two nights are gone from the list.
    b.goto(&app.url("/")).await?;
    wait_list(&b, "catalogue-now", "25 events on sale", &all[..20]).await?;
    advance_page_clock(&b, Duration::days(3) + Duration::hours(1)).await?;
    pick_date(&b, "#from-filter", "").await?;
    wait_list(&b, "catalogue-later", "23 events on sale", &all[2..22]).await?;
    b.screenshot("catalogue-5-two-days-later").await?;
    // Up to a day gone by: nothing is on sale then, which is no reversed range to complain of.
    pick_date(&b, "#to-filter", &events[0].0).await?;
    wait_list(&b, "catalogue-past", "No events on sale", &[]).await?;
    check_count(
        &b,
        "catalogue-past-no-problem",
        "#message:not([hidden])",
        0,
        "messages shown",
    )
    .await?;
    // A From day after the To day is the fan's own reversed range: the page says so, and the
    // results of the filters before do not stay under the sentence.
    pick_date(&b, "#to-filter", "").await?;
    pick_date(&b, "#from-filter", &events[10].0).await?;
    wait_list(&b, "catalogue-from", "15 events on sale", &all[10..]).await?;
    pick_date(&b, "#to-filter", &events[6].0).await?;
    wait_problem(&b, "catalogue-reversed", "bad-date-range").await?;
    check_count(
        &b,
        "catalogue-reversed-empty",
        "#results a.result, #more-events",
        0,
        "results left",
    )
    .await?;
    b.screenshot("catalogue-6-reversed").await?;
    scene.finish([b]).await
}

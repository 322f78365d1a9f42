//! What the browser tests share: the server plus a chromedriver, signing a fan in, opening an
//! event page and the `window.frontrowMap` hooks of web/CONTRACT.md.

use std::time::Duration;

use anyhow::Context;
use frontrow_browser::{Browser, Driver, Viewport};
use frontrow_schema::EventId;
use serde_json::{Value, json};

use crate::common::TestApp;

/// How long a page gets to show what a step expects (generous: two cores, many builds).
pub const WAIT: Duration = Duration::from_secs(15);

/// One test at a time: several Chromiums at once on two cores would make every wait a race
/// against the machine rather than the page.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The server and a chromedriver for one test.
pub struct Scene {
    pub app: TestApp,
    pub driver: Driver,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl Scene {
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_with(|_| {}).await
    }

    /// [`Self::start`] with the server's settings changed by `configure`.
    pub async fn start_with(configure: impl FnOnce(&mut frontrow::Settings)) -> anyhow::Result<Self> {
        let turn = ONE_AT_A_TIME.lock().await;
        let app = TestApp::spawn_with(configure).await;
        let driver = Driver::start().await?;
        Ok(Self {
            app,
            driver,
            _turn: turn,
        })
    }

    /// [`Self::start`], with the small test event ([`TestApp::event_body`], on sale since a
    /// minute ago) changed by `change` and created.
    pub async fn with_event(change: impl FnOnce(&mut Value)) -> anyhow::Result<(Self, EventId)> {
        let scene = Self::start().await?;
        let event = scene
            .app
            .create_event_changed(chrono::Duration::minutes(-1), change)
            .await;
        Ok((scene, event))
    }

    /// [`Self::with_event`] unchanged, with `name` signed in on its page ([`Self::fan_on`]).
    pub async fn with_fan(name: &str, viewport: Viewport) -> anyhow::Result<(Self, EventId, Browser)> {
        let (scene, event) = Self::with_event(|_| {}).await?;
        let b = scene.fan_on(name, viewport, event).await?;
        Ok((scene, event, b))
    }

    /// A new browser session signed in as `name` (demo mode) on the catalogue page.
    pub async fn fan(&self, name: &str, viewport: Viewport) -> anyhow::Result<Browser> {
        let b = self.driver.session(viewport).await?;
        b.goto(&self.app.url("/")).await?;
        b.type_into("#signin-name", name).await?;
        b.click("#signin-button").await?;
        b.wait_for_text("#whoami", name, WAIT).await?;
        Ok(b)
    }

    /// [`Self::fan`] on the event page ([`Self::open_event`]).
    pub async fn fan_on(&self, name: &str, viewport: Viewport, event: EventId) -> anyhow::Result<Browser> {
        let b = self.fan(name, viewport).await?;
        self.open_event(&b, event).await?;
        Ok(b)
    }

    /// Opens the event page and waits for the map's first full draw.
    pub async fn open_event(&self, b: &Browser, event: EventId) -> anyhow::Result<()> {
        b.goto(&self.app.url(&format!("/e/{event}"))).await?;
        map_ready(b).await?;
        watch_messages(b).await
    }

    /// Calls the API as the fan signed in to `b` (its token from `sessionStorage`).
    pub async fn api_as(&self, b: &Browser, path: &str) -> anyhow::Result<Value> {
        let token = b.js("return sessionStorage.getItem('frontrow.token');", vec![]).await?;
        let token = token.as_str().context("no frontrow.token in sessionStorage")?;
        let res = self
            .app
            .client
            .get(self.app.url(path))
            .bearer_auth(token)
            .send()
            .await?;
        anyhow::ensure!(res.status() == 200, "GET {path}: {}", res.status());
        Ok(res.json().await?)
    }

    /// Stops the server (the driver and its browsers die when `self.driver` drops).
    pub async fn stop(self) {
        self.app.stop().await;
    }

    /// The end of a test: closes the browsers, then stops the server.
    pub async fn finish(self, browsers: impl IntoIterator<Item = Browser>) -> anyhow::Result<()> {
        for b in browsers {
            b.close().await?;
        }
        self.stop().await;
        Ok(())
    }
}

/// Waits for `frontrowMap.ready` (the first full draw of the map).
pub async fn map_ready(b: &Browser) -> anyhow::Result<()> {
    b.wait_until(
        "map-ready",
        WAIT,
        "the seat map is drawn (frontrowMap.ready)",
        || async {
            let v = b
                .js(
                    "return window.frontrowMap ? window.frontrowMap.ready.then(() => true) : false;",
                    vec![],
                )
                .await?;
            Ok(v.as_bool().unwrap_or(false).then_some(()))
        },
    )
    .await
}

/// The map's letter for a seat (`A`, `H` or `B`).
pub async fn status(b: &Browser, seat: &str) -> anyhow::Result<String> {
    let v = b
        .js("return window.frontrowMap.status(arguments[0]);", vec![json!(seat)])
        .await?;
    v.as_str()
        .map(str::to_owned)
        .with_context(|| format!("status({seat}) gave {v}"))
}

/// Whether the fan has picked `seat`.
pub async fn selected(b: &Browser, seat: &str) -> anyhow::Result<bool> {
    let v = b
        .js("return window.frontrowMap.selected(arguments[0]);", vec![json!(seat)])
        .await?;
    v.as_bool().with_context(|| format!("selected({seat}) gave {v}"))
}

/// Waits until the map shows `seat` as `letter`; a timeout fails (with a screenshot).
pub async fn wait_status(b: &Browser, shot: &str, seat: &str, letter: &str, timeout: Duration) -> anyhow::Result<()> {
    let message = format!("the map shows {seat} as {letter}");
    b.wait_until(shot, timeout, &message, || async {
        Ok((status(b, seat).await? == letter).then_some(()))
    })
    .await
}

/// Clicks a seat where the map draws it (`frontrowMap.seatCenter`, which zooms in if needed)
/// with real pointer actions, and waits until the map has it picked.
pub async fn click_seat(b: &Browser, seat: &str) -> anyhow::Result<()> {
    let center = b
        .wait_until(
            &format!("seat-center-{seat}"),
            WAIT,
            &format!("{seat} is on screen"),
            || async {
                let v = b
                    .js("return window.frontrowMap.seatCenter(arguments[0]);", vec![json!(seat)])
                    .await?;
                Ok(v.get("x")
                    .and_then(Value::as_f64)
                    .zip(v.get("y").and_then(Value::as_f64)))
            },
        )
        .await?;
    b.click_at(center.0, center.1).await?;
    let message = format!("{seat} is picked after a click at {center:?}");
    b.wait_until(&format!("picked-{seat}"), WAIT, &message, || async {
        Ok(selected(b, seat).await?.then_some(()))
    })
    .await
}

/// The colour the map paints near the centre of a seat, as `[r, g, b]`: at its centre moved by
/// `offset` seat pitches right and down (the pitch is the distance to `neighbour`'s centre in
/// the same row), read from the canvas where `frontrowMap.seatCenter` says the seats are.
pub async fn seat_colour(b: &Browser, seat: &str, neighbour: &str, offset: (f64, f64)) -> anyhow::Result<[u8; 3]> {
    let v = b
        .js(
            "const [seat, next, fx, fy] = arguments;
             const p = window.frontrowMap.seatCenter(seat);
             const q = window.frontrowMap.seatCenter(next);
             if (!p || !q) return null;
             const pitch = Math.hypot(q.x - p.x, q.y - p.y);
             const c = document.getElementById('seat-map');
             const r = c.getBoundingClientRect();
             const k = c.width / r.width;
             const x = Math.round((p.x + fx * pitch - r.left) * k), y = Math.round((p.y + fy * pitch - r.top) * k);
             const d = c.getContext('2d').getImageData(x, y, 1, 1).data;
             return [d[0], d[1], d[2]];",
            vec![json!(seat), json!(neighbour), json!(offset.0), json!(offset.1)],
        )
        .await?;
    let rgb: Vec<u8> =
        serde_json::from_value(v.clone()).map_err(|e| anyhow::anyhow!("{seat} is not on screen ({v}): {e}"))?;
    anyhow::ensure!(rgb.len() == 3, "{seat}: {v}");
    Ok([rgb[0], rgb[1], rgb[2]])
}

/// Whether the on-screen boxes of the first elements matching `a` and `b_css` intersect (both
/// must be shown; a hidden or missing one is an error, so the check cannot pass by accident).
pub async fn boxes_overlap(b: &Browser, a: &str, b_css: &str) -> anyhow::Result<bool> {
    let v = b
        .js(
            "const boxes = Array.from(arguments, css => {
               const e = document.querySelector(css);
               if (!e || e.hidden) return null;
               const r = e.getBoundingClientRect();
               return r.width > 0 && r.height > 0 ? r : null;
             });
             if (boxes.includes(null)) return null;
             const [p, q] = boxes;
             return p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom;",
            vec![json!(a), json!(b_css)],
        )
        .await?;
    v.as_bool()
        .ok_or_else(|| anyhow::anyhow!("{a} or {b_css} is not shown on the page"))
}

/// Moves the page's `Date.now()` forward by `by` (and keeps it moved on this document): the
/// server's manual clock jumps, and in real life the fan's clock would have moved as much.
/// `performance.now()` is left alone.
pub async fn advance_page_clock(b: &Browser, by: chrono::Duration) -> anyhow::Result<()> {
    b.js(
        "if (!window.frontrowRealNow) {
           window.frontrowRealNow = Date.now.bind(Date);
           window.frontrowClockShift = 0;
           Date.now = () => window.frontrowRealNow() + window.frontrowClockShift;
         }
         window.frontrowClockShift += arguments[0];",
        vec![json!(by.num_milliseconds())],
    )
    .await?;
    Ok(())
}

/// Records every sentence `#message` shows (`window.frontrowMessages`, `[problem, text]`), so a
/// message that a later step replaces is still seen. Installed by [`Scene::open_event`]; call it
/// again after a navigation.
pub async fn watch_messages(b: &Browser) -> anyhow::Result<()> {
    b.js(
        "if (window.frontrowMessages) return;
         window.frontrowMessages = [];
         const m = document.getElementById('message');
         const note = () => {
           if (!m.hidden && m.getClientRects().length && m.textContent.trim())
             window.frontrowMessages.push([m.getAttribute('data-problem') || '', m.textContent.trim()]);
         };
         new MutationObserver(note).observe(m, {attributes: true, childList: true, characterData: true, subtree: true});
         note();",
        vec![],
    )
    .await?;
    Ok(())
}

/// Waits until `#message` has shown a sentence with `data-problem` = `problem`; returns it
/// after checking it is words, not JSON or a problem URN.
pub async fn wait_problem(b: &Browser, shot: &str, problem: &str) -> anyhow::Result<String> {
    let message = format!("#message shows a {problem:?} problem");
    let text = b
        .wait_until(shot, WAIT, &message, || async {
            let seen = b
                .js(
                    "const m = document.getElementById('message');
                     const now = m && !m.hidden && m.getClientRects().length
                       ? [[m.getAttribute('data-problem') || '', m.textContent.trim()]] : [];
                     return (window.frontrowMessages || []).concat(now)
                       .filter(([p, t]) => p === arguments[0] && t).map(([p, t]) => t)[0] ?? null;",
                    vec![json!(problem)],
                )
                .await?;
            Ok(seen.as_str().map(str::to_owned))
        })
        .await?;
    let words = !text.starts_with('{') && !text.contains("urn:") && !text.contains("\"type\"");
    let sentence = words && text.split_whitespace().count() >= 3;
    b.check(shot, sentence, format!("#message is not a sentence: {text:?}"))
        .await?;
    Ok(text)
}

/// Checks that `n` elements on the page match `css` (`what` says what they are).
pub async fn check_count(b: &Browser, shot: &str, css: &str, n: u64, what: &str) -> anyhow::Result<()> {
    let found = b
        .js(
            "return document.querySelectorAll(arguments[0]).length;",
            vec![json!(css)],
        )
        .await?;
    b.check(shot, found == json!(n), format!("{found} {what}, expected {n}"))
        .await
}

/// The `data-*` attribute `key` (as `dataset` names it: `eventId` for `data-event-id`) of every
/// element matching `css`, in the page's order.
pub async fn data_of(b: &Browser, css: &str, key: &str) -> anyhow::Result<Vec<String>> {
    let values = b
        .js(
            "return [...document.querySelectorAll(arguments[0])].map((e) => e.dataset[arguments[1]]);",
            vec![json!(css), json!(key)],
        )
        .await?;
    Ok(serde_json::from_value(values)?)
}

/// Waits until the element matching `css` is displayed and returns its text.
pub async fn shown_text(b: &Browser, css: &str) -> anyhow::Result<String> {
    b.wait_for(css, WAIT).await?;
    b.text(css).await
}

/// Waits until the API's map shows `seat` as `letter` (the query side follows the writer).
pub async fn api_wait_letter(app: &TestApp, event: EventId, seat: &str, letter: char) -> anyhow::Result<()> {
    frontrow_browser::wait_until(WAIT, &format!("the API shows {seat} as {letter}"), || async {
        Ok((app.seat_letter(event, seat).await == letter).then_some(()))
    })
    .await
}

/// Waits until `GET /search?q=query` finds `event` (the search projector indexes
/// asynchronously).
pub async fn wait_searchable(app: &TestApp, query: &str, event: EventId) -> anyhow::Result<()> {
    let url = app.url(&format!("/search?q={}", query.replace(' ', "%20")));
    frontrow_browser::wait_until(WAIT, &format!("search for {query:?} finds {event}"), || async {
        let found = app.client.get(&url).send().await?.text().await?;
        Ok(found.contains(&event.to_string()).then_some(()))
    })
    .await
}

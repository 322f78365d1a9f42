//! `frontrow-browser`: the WebDriver harness FrontRow's browser tests and benchmark share.
//!
//! - [`Driver::start`] runs `chromedriver --port=<free loopback port>` in a process group of
//!   its own; dropping the [`Driver`] kills that group (the driver and every Chromium it
//!   started, even after a panic).
//! - [`Driver::session`] opens a headless Chromium session ([`fantoccini`]) with a fresh
//!   profile directory and a [`Viewport`] per test ([`Viewport::DESKTOP`], [`Viewport::PHONE`]).
//! - [`Browser`] adds what the tests need on top: [`Browser::wait_until`] (a timeout is an
//!   error that names what was awaited and saves a screenshot), waits for an element or a text,
//!   [`Browser::click_at`] (real pointer actions at viewport coordinates), [`Browser::js`], and
//!   [`Browser::screenshot`], which saves `<workspace>/target/screenshots/<name>.png`.
//!
//! The binaries default to Debian's `/usr/bin/chromium` and `/usr/bin/chromedriver`
//! (`deploy/local/chromium.sh` installs them); `FRONTROW_CHROMIUM` and `FRONTROW_CHROMEDRIVER`
//! override them.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use fantoccini::actions::{InputSource, MOUSE_BUTTON_LEFT, MouseActions, PointerAction};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// A running `chromedriver`, killed (with the browsers it started) on drop.
pub struct Driver {
    child: Child,
    url: String,
}

/// The size of a session's viewport in CSS pixels, its device pixel ratio, and whether it is a
/// phone (Chromium's mobile emulation: that exact viewport, touch, a mobile user agent; a
/// desktop window cannot be narrower than 500 px).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewport {
    pub width: u32,
    pub height: u32,
    pub scale: f64,
    pub mobile: bool,
}

impl Viewport {
    /// A laptop screen.
    pub const DESKTOP: Viewport = Viewport {
        width: 1280,
        height: 900,
        scale: 1.0,
        mobile: false,
    };
    /// A phone held upright (CSS pixels of a 6.1" phone, at twice the density).
    pub const PHONE: Viewport = Viewport {
        width: 390,
        height: 844,
        scale: 2.0,
        mobile: true,
    };
}

fn binary(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default))
}

impl Driver {
    /// Starts `chromedriver` on a free loopback port and waits until it accepts connections.
    pub async fn start() -> anyhow::Result<Self> {
        let exe = binary("FRONTROW_CHROMEDRIVER", "/usr/bin/chromedriver");
        anyhow::ensure!(
            exe.exists(),
            "{} is missing: run deploy/local/chromium.sh (or ./deploy/local/up.sh chromium)",
            exe.display()
        );
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
        let child = Command::new(&exe)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        let mut driver = Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Some(status) = driver.child.try_wait()? {
                bail!("chromedriver exited at startup: {status}");
            }
            anyhow::ensure!(Instant::now() < deadline, "chromedriver not listening after 20 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(driver)
    }

    /// Opens a headless Chromium session with a fresh profile and the given window.
    pub async fn session(&self, viewport: Viewport) -> anyhow::Result<Browser> {
        let profile = tempfile::Builder::new().prefix("frontrow-chromium-").tempdir()?;
        let chromium = binary("FRONTROW_CHROMIUM", "/usr/bin/chromium");
        let mut args = vec![
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--no-first-run".to_owned(),
            // Timers and rAF keep full speed in a window nobody looks at.
            "--disable-background-timer-throttling".to_owned(),
            "--disable-renderer-backgrounding".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut options = json!({ "binary": chromium });
        if viewport.mobile {
            args.push(format!(
                "--window-size={},{}",
                viewport.width.max(500),
                viewport.height + 100
            ));
            options["mobileEmulation"] = json!({ "deviceMetrics": {
                "width": viewport.width, "height": viewport.height, "pixelRatio": viewport.scale, "touch": true,
            }});
        } else {
            args.push(format!("--window-size={},{}", viewport.width, viewport.height));
            args.push(format!("--force-device-scale-factor={}", viewport.scale));
        }
        options["args"] = json!(args);
        let caps = json!({ "browserName": "chrome", "goog:chromeOptions": options });
        let Value::Object(caps) = caps else {
            unreachable!("a JSON object")
        };
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&self.url)
            .await
            .context("opening a WebDriver session")?;
        Ok(Browser {
            client,
            _profile: profile,
        })
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The group holds chromedriver and the browsers it launched.
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.child.wait();
    }
}

/// Where screenshots go: `$CARGO_TARGET_DIR/screenshots` or `<workspace>/target/screenshots`.
pub fn screenshot_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
            crate_dir.parent().unwrap_or(crate_dir).join("target")
        })
        .join("screenshots")
}

/// Polls `condition` every 25 ms until it gives `Some`; after `timeout` the error says
/// `message` and the last error the condition returned, if any. A condition's error does not
/// end the wait (the page may not be ready yet).
pub async fn wait_until<T, F, Fut>(timeout: Duration, message: &str, mut condition: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = Instant::now() + timeout;
    let mut last_error = None;
    loop {
        match condition().await {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => {}
            Err(e) => last_error = Some(e),
        }
        if Instant::now() >= deadline {
            let cause = last_error.map(|e| format!(" (last error: {e:#})")).unwrap_or_default();
            bail!("timed out after {timeout:?} waiting until {message}{cause}");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// One headless Chromium session.
pub struct Browser {
    /// The underlying WebDriver client, for what the helpers do not cover.
    pub client: Client,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub async fn goto(&self, url: &str) -> anyhow::Result<()> {
        self.client.goto(url).await.with_context(|| format!("opening {url}"))
    }

    /// Runs `script` (a function body; `arguments[i]` are `args`) and returns its value.
    /// A returned Promise is awaited.
    pub async fn js(&self, script: &str, args: Vec<Value>) -> anyhow::Result<Value> {
        let value = self
            .client
            .execute(script, args)
            .await
            .with_context(|| format!("running script: {script}"))?;
        Ok(value)
    }

    /// [`wait_until`], and on timeout a screenshot named `timeout-<shot>` whose path the error
    /// gives.
    pub async fn wait_until<T, F, Fut>(
        &self,
        shot: &str,
        timeout: Duration,
        message: &str,
        condition: F,
    ) -> anyhow::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = anyhow::Result<Option<T>>>,
    {
        match wait_until(timeout, message, condition).await {
            Ok(v) => Ok(v),
            Err(e) => Err(self.fail_with_screenshot(shot, e).await),
        }
    }

    /// Adds a screenshot (named `timeout-<shot>`) and the page's address to an error.
    pub async fn fail_with_screenshot(&self, shot: &str, error: anyhow::Error) -> anyhow::Error {
        self.annotate(&format!("timeout-{shot}"), error).await
    }

    async fn annotate(&self, shot: &str, error: anyhow::Error) -> anyhow::Error {
        let url = self
            .client
            .current_url()
            .await
            .map(|u| u.to_string())
            .unwrap_or_default();
        match self.screenshot(shot).await {
            Ok(path) => error.context(format!("at {url}; screenshot {}", path.display())),
            Err(shot_error) => error.context(format!("at {url}; no screenshot: {shot_error:#}")),
        }
    }

    /// Fails with `message` and a screenshot (named `failed-<shot>`) unless `ok`.
    pub async fn check(&self, shot: &str, ok: bool, message: impl std::fmt::Display) -> anyhow::Result<()> {
        if ok {
            return Ok(());
        }
        Err(self
            .annotate(&format!("failed-{shot}"), anyhow::anyhow!("{message}"))
            .await)
    }

    /// Waits until an element matching `css` is displayed.
    pub async fn wait_for(&self, css: &str, timeout: Duration) -> anyhow::Result<fantoccini::elements::Element> {
        self.wait_until(css, timeout, &format!("{css} is displayed"), || async {
            let Ok(e) = self.client.find(Locator::Css(css)).await else {
                return Ok(None);
            };
            Ok(e.is_displayed().await?.then_some(e))
        })
        .await
    }

    /// The text of the first element matching `css` (`""` if there is none).
    pub async fn text(&self, css: &str) -> anyhow::Result<String> {
        let v = self
            .js(
                "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';",
                vec![json!(css)],
            )
            .await?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }

    /// Waits until the text of the element matching `css` contains `needle` (case-insensitive);
    /// returns the whole text.
    pub async fn wait_for_text(&self, css: &str, needle: &str, timeout: Duration) -> anyhow::Result<String> {
        let needle_lower = needle.to_lowercase();
        self.wait_until(css, timeout, &format!("{css} says {needle:?}"), || async {
            let text = self.text(css).await?;
            Ok(text.to_lowercase().contains(&needle_lower).then_some(text))
        })
        .await
    }

    /// An attribute of the first element matching `css`, if both exist.
    pub async fn attr(&self, css: &str, name: &str) -> anyhow::Result<Option<String>> {
        let v = self
            .js(
                "const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null;",
                vec![json!(css), json!(name)],
            )
            .await?;
        Ok(v.as_str().map(str::to_owned))
    }

    /// Clicks the element matching `css` (a WebDriver element click: scrolled into view, real
    /// events).
    pub async fn click(&self, css: &str) -> anyhow::Result<()> {
        let element = self.wait_for(css, Duration::from_secs(5)).await?;
        element.click().await.with_context(|| format!("clicking {css}"))
    }

    /// Types `text` into the element matching `css` (real key events).
    pub async fn type_into(&self, css: &str, text: &str) -> anyhow::Result<()> {
        let element = self.wait_for(css, Duration::from_secs(5)).await?;
        element
            .send_keys(text)
            .await
            .with_context(|| format!("typing into {css}"))
    }

    /// A left click at viewport coordinates (CSS pixels) through WebDriver pointer actions: the
    /// page sees real `pointermove`/`pointerdown`/`pointerup`/`click` events there.
    pub async fn click_at(&self, x: f64, y: f64) -> anyhow::Result<()> {
        let mouse = MouseActions::new("mouse".to_owned())
            .then(PointerAction::MoveTo {
                duration: Some(Duration::from_millis(0)),
                x: x.round(),
                y: y.round(),
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
        self.client
            .perform_actions(mouse)
            .await
            .with_context(|| format!("clicking at ({x}, {y})"))?;
        self.client.release_actions().await?;
        Ok(())
    }

    /// Saves a PNG of the viewport as `<screenshot_dir>/<name>.png` and returns its path.
    pub async fn screenshot(&self, name: &str) -> anyhow::Result<PathBuf> {
        let png = self.client.screenshot().await.context("taking a screenshot")?;
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// Ends the session (Chromium exits); its profile directory is removed.
    pub async fn close(self) -> anyhow::Result<()> {
        self.client.close().await.context("closing the session")
    }
}

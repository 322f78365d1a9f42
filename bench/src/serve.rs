//! Servers under test, each on a tokio runtime of its own (two worker threads, like the
//! machine's two cores), so the load generator's runtime and the server's never share a
//! scheduler: what the harness measures is HTTP over loopback, as from a separate process.

use std::future::Future;
use std::net::SocketAddr;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A server running on its own runtime until [`Served::stop`].
pub struct Served {
    pub name: &'static str,
    pub addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl Served {
    /// Starts a runtime, binds `127.0.0.1:0` on it (with `frontrow serve`'s accept queue) and runs `serve(listener, shutdown)` there.
    /// `serve` builds its state on the server's runtime (pools, background tasks live there).
    pub async fn start<F, Fut>(name: &'static str, serve: F) -> anyhow::Result<Self>
    where
        F: FnOnce(TcpListener, oneshot::Receiver<()>) -> Fut + Send + 'static,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(format!("bench-{name}"))
            .enable_all()
            .build()
            .context("building a server runtime")?;
        let (stop_tx, stop_rx) = oneshot::channel();
        let (addr_tx, addr_rx) = oneshot::channel();
        let done = runtime.spawn(async move {
            // The accept queue `frontrow serve` asks for, for FrontRow and the baselines alike.
            let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
            let listener =
                frontrow::net::listen(any_port, frontrow::net::DEFAULT_BACKLOG).context("binding 127.0.0.1:0")?;
            let _ = addr_tx.send(listener.local_addr()?);
            serve(listener, stop_rx).await
        });
        let addr = match addr_rx.await {
            Ok(addr) => addr,
            Err(_) => {
                let cause = match done.await {
                    Ok(Err(e)) => e,
                    Ok(Ok(())) => anyhow::anyhow!("it ended before binding"),
                    Err(e) => e.into(),
                };
                return Err(cause.context(format!("{name} did not start")));
            }
        };
        Ok(Self {
            name,
            addr,
            runtime: Some(runtime),
            stop: Some(stop_tx),
            done: Some(done),
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Asks the server to shut down gracefully, waits for it, then ends its runtime.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let result = match self.done.take() {
            Some(done) => done.await.context("server task panicked").and_then(|r| r),
            None => Ok(()),
        };
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
        result.with_context(|| format!("{} ended with an error", self.name))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Serves an axum router until the shutdown signal.
pub async fn axum_until(
    listener: TcpListener,
    router: axum::Router,
    stop: oneshot::Receiver<()>,
) -> anyhow::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            let _ = stop.await;
        })
        .await
        .context("serving HTTP")
}

/// Refuses anything but a loopback address: the harness never loads another machine.
pub fn require_loopback(url: &str) -> anyhow::Result<()> {
    let parsed = url::Url::parse(url).with_context(|| format!("{url:?} is not a URL"))?;
    let host = parsed.host().with_context(|| format!("{url:?} has no host"))?;
    let loopback = match host {
        // URLs of non-special schemes (postgres://, redis://) keep IP addresses as text.
        url::Host::Domain(d) => {
            d == "localhost"
                || d.trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    anyhow::ensure!(
        loopback,
        "{url:?} is not on loopback: the harness only loads this machine"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_urls_pass() {
        for ok in [
            "postgres://u:p@127.0.0.1:5432/db",
            "redis://localhost:6390",
            "http://[::1]:80/",
            "redis://127.0.0.2/",
        ] {
            assert!(require_loopback(ok).is_ok(), "{ok}");
        }
        for bad in [
            "postgres://u:p@10.0.0.5/db",
            "redis://cache.example.com:6379",
            "http://0.0.0.0:1/",
        ] {
            assert!(require_loopback(bad).is_err(), "{bad}");
        }
    }
}

//! The listening socket.
//!
//! `tokio::net::TcpListener::bind` asks the kernel for an accept queue of 1,024 connections.
//! A flash crowd opens connections faster than that for a moment: once the queue is full the
//! kernel drops the client's handshake, and the client's TCP tries again only after a second
//! (its first SYN retransmission), so a few percent of the fans wait a second for nothing.
//! [`listen`] binds with the queue the settings ask for ([`crate::Settings::listen_backlog`]),
//! which the kernel caps at `net.core.somaxconn` (4,096 by default since Linux 5.4).

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket};

/// The accept queue a node asks for unless configured otherwise.
pub const DEFAULT_BACKLOG: u32 = 4096;

/// A listener bound to `addr` (port 0: any free port) with an accept queue of `backlog`
/// connections, and `SO_REUSEADDR` as `TcpListener::bind` sets it, so that a restarted node
/// can bind while its old connections linger in `TIME_WAIT`.
pub fn listen(addr: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// The accept queue the kernel grants for `backlog`: `net.core.somaxconn` caps it (`None`
/// when that cannot be read).
pub fn granted_backlog(backlog: u32) -> Option<u32> {
    let max: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(backlog.min(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With nobody accepting, the kernel completes handshakes into the accept queue until it
    /// is full: a listener asked for more than tokio's 1,024 holds more than 1,024 connections
    /// (loopback, so the count is the queue's, not the network's).
    #[tokio::test]
    async fn the_accept_queue_holds_what_was_asked_for() {
        let Some(granted) = granted_backlog(1500).filter(|g| *g == 1500) else {
            eprintln!("net.core.somaxconn is below 1500 here: nothing to compare");
            return;
        };
        // One descriptor per client connection: raise the soft limit to the hard one.
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        let hard = limit.maximum;
        let _ = rustix::process::setrlimit(
            rustix::process::Resource::Nofile,
            rustix::process::Rlimit {
                current: hard,
                maximum: hard,
            },
        );
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        if soft.is_some_and(|s| s < 1300) {
            eprintln!("RLIMIT_NOFILE is {soft:?} here: too few descriptors to fill the queue");
            return;
        }
        let listener = listen("127.0.0.1:0".parse().unwrap(), granted).unwrap();
        let addr = listener.local_addr().unwrap();
        let mut held = Vec::new();
        for _ in 0..1200 {
            let connected = tokio::time::timeout(
                std::time::Duration::from_millis(500),
                tokio::net::TcpStream::connect(addr),
            )
            .await;
            match connected {
                Ok(Ok(stream)) => held.push(stream),
                _ => break,
            }
        }
        assert_eq!(held.len(), 1200, "the queue took only {} connections", held.len());
        drop(listener);
    }
}

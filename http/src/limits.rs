//! Abuse limits at the HTTP edge: who the client is, and how fast it may write.
//!
//! **The client address** ([`ClientAddr`]) is the TCP peer's address. Only when the peer is one
//! of the configured `trusted_proxies` is `X-Forwarded-For` read: from its right end, skipping
//! trusted proxies, the first address is the client (each proxy appends the address it received
//! the request from, so entries left of an untrusted one may be forged and are never used).
//! IPv6 clients are keyed by their /64, which one subscriber usually holds whole.
//!
//! **Rates** ([`RateLimits`], the [`rate_limit`] middleware on the write and join routes): a
//! GCRA bucket per customer (the verified bearer token's subject) and one per client address,
//! from the `governor` crate. A request over either gets `429 rate-limited` with `Retry-After`
//! before any handler or writer sees it. Buckets live in this process: each node limits alone.
//!
//! The stream caps (`sse_*`) are read by the query side's server-sent event routes.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::{HeaderMap, StatusCode, header::AUTHORIZATION};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use frontrow_schema::CustomerId;
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota};
use serde::{Deserialize, Serialize};

use crate::Problem;
use crate::auth::Customer;

/// The abuse limits, one table of the settings (`[limits]`, `FRONTROW_LIMITS__*`). A rate or a
/// cap of 0 turns that limit off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Write and join requests one customer may make per second, sustained.
    pub customer_per_second: u32,
    /// ... and at once after a quiet spell.
    pub customer_burst: u32,
    /// Write and join requests one client address (an IPv6 /64) may make per second, sustained.
    pub address_per_second: u32,
    /// ... and at once after a quiet spell.
    pub address_burst: u32,
    /// Peers whose `X-Forwarded-For` is believed (load balancers, reverse proxies, the other
    /// command nodes that forward to this one). Empty: the peer address is the client.
    pub trusted_proxies: Vec<IpAddr>,
    /// Server-sent event streams this node holds at once.
    pub sse_per_node: usize,
    /// Waiting-room status streams one customer holds at once.
    pub sse_per_customer: usize,
    /// Seat streams (anonymous) one client address holds at once.
    pub sse_per_address: usize,
    /// A stream that has sent no event for this long is closed (heartbeats do not count); the
    /// client reconnects with `Last-Event-ID` and loses nothing.
    pub sse_idle_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            customer_per_second: 5,
            customer_burst: 20,
            address_per_second: 50,
            address_burst: 200,
            trusted_proxies: Vec::new(),
            sse_per_node: 20_000,
            sse_per_customer: 4,
            sse_per_address: 100,
            sse_idle_secs: 300,
        }
    }
}

impl Limits {
    /// No rate limits and no stream caps (load tests from one address; the idle timeout stays).
    pub fn off() -> Self {
        Self {
            customer_per_second: 0,
            address_per_second: 0,
            sse_per_node: 0,
            sse_per_customer: 0,
            sse_per_address: 0,
            ..Self::default()
        }
    }
}

/// The client's address (see the module docs), put into the request extensions by
/// [`client_address`]; absent when the server was not given its peers' addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientAddr(pub IpAddr);

impl ClientAddr {
    /// The address limits are keyed by: an IPv4 address, or an IPv6 address's /64.
    pub fn key(self) -> IpAddr {
        match self.0.to_canonical() {
            IpAddr::V6(v6) => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
            v4 => v4,
        }
    }
}

/// Most `X-Forwarded-For` entries read from the right: more proxies than this in a row is not
/// a deployment, it is a forged header.
const MAX_FORWARDED_HOPS: usize = 16;

/// Works out [`ClientAddr`] from the peer and the trusted proxies.
#[derive(Debug, Clone, Default)]
pub struct ClientAddresses {
    trusted: Vec<IpAddr>,
}

impl ClientAddresses {
    pub fn new(trusted: &[IpAddr]) -> Self {
        Self {
            trusted: trusted.iter().map(|ip| ip.to_canonical()).collect(),
        }
    }

    pub fn of(&self, peer: IpAddr, headers: &HeaderMap) -> ClientAddr {
        let mut client = peer.to_canonical();
        if !self.trusted.contains(&client) {
            return ClientAddr(client);
        }
        // Later header lines were appended later, like later entries within a line.
        let hops = headers
            .get_all("x-forwarded-for")
            .iter()
            .rev()
            .flat_map(|v| v.to_str().unwrap_or("").rsplit(','))
            .take(MAX_FORWARDED_HOPS);
        for hop in hops {
            let Ok(ip) = hop.trim().parse::<IpAddr>() else { break };
            client = ip.to_canonical();
            if !self.trusted.contains(&client) {
                break;
            }
        }
        ClientAddr(client)
    }
}

/// Middleware: puts the [`ClientAddr`] of each request into its extensions. Needs the server
/// to be run with `into_make_service_with_connect_info::<SocketAddr>()`.
pub async fn client_address(State(clients): State<Arc<ClientAddresses>>, mut req: Request, next: Next) -> Response {
    if let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>().copied() {
        let client = clients.of(peer.ip(), req.headers());
        req.extensions_mut().insert(client);
    }
    next.run(req).await
}

/// Requests between two sweeps of idle buckets out of memory.
const SWEEP_EVERY: u64 = 4096;

/// The request-rate buckets of one node.
pub struct RateLimits {
    customers: Option<DefaultKeyedRateLimiter<CustomerId>>,
    addresses: Option<DefaultKeyedRateLimiter<IpAddr>>,
    checks: AtomicU64,
}

fn quota(per_second: u32, burst: u32) -> Option<Quota> {
    let rate = NonZeroU32::new(per_second)?;
    Some(Quota::per_second(rate).allow_burst(NonZeroU32::new(burst).unwrap_or(rate)))
}

impl RateLimits {
    pub fn new(limits: &Limits) -> Self {
        Self {
            customers: quota(limits.customer_per_second, limits.customer_burst).map(DefaultKeyedRateLimiter::keyed),
            addresses: quota(limits.address_per_second, limits.address_burst).map(DefaultKeyedRateLimiter::keyed),
            checks: AtomicU64::new(0),
        }
    }

    /// Whether any rate is limited at all.
    pub fn is_on(&self) -> bool {
        self.customers.is_some() || self.addresses.is_some()
    }

    /// Takes one request from the address's bucket and the customer's.
    pub fn check(&self, address: Option<ClientAddr>, customer: Option<&CustomerId>) -> Result<(), Problem> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.sweep();
        }
        if let (Some(limiter), Some(address)) = (&self.addresses, address) {
            limiter
                .check_key(&address.key())
                .map_err(|wait| limited("address", wait.wait_time_from(limiter.clock().now())))?;
        }
        if let (Some(limiter), Some(customer)) = (&self.customers, customer) {
            limiter
                .check_key(customer)
                .map_err(|wait| limited("customer", wait.wait_time_from(limiter.clock().now())))?;
        }
        Ok(())
    }

    /// Forgets buckets that are full again (their keys have been quiet), so memory follows the
    /// clients of the last moments rather than every client ever seen.
    fn sweep(&self) {
        if let Some(l) = &self.customers {
            l.retain_recent();
            l.shrink_to_fit();
        }
        if let Some(l) = &self.addresses {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}

/// The `429` for a request over a limit, with the whole seconds until one more is allowed.
pub fn too_many(limit: &'static str, detail: String, retry_after: u32) -> Problem {
    Problem::new(StatusCode::TOO_MANY_REQUESTS, "rate-limited", detail)
        .with("limit", limit)
        .retry_after(retry_after.max(1))
}

fn limited(limit: &'static str, wait: std::time::Duration) -> Problem {
    let secs = u32::try_from(wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).unwrap_or(u32::MAX);
    too_many(limit, format!("too many requests from this {limit}; slow down"), secs)
}

/// Middleware for the write and join routes: refuses a request over its address's or its
/// customer's rate with `429`. A request with a valid bearer token counts against that
/// customer; the verified [`Customer`] is left in the extensions for the handler.
pub async fn rate_limit(State(limits): State<Arc<RateLimits>>, req: Request, next: Next) -> Response {
    if !limits.is_on() {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let address = parts.extensions.get::<ClientAddr>().copied();
    // Address first: it is free to check, and stops a flood before any token is verified.
    if let Err(problem) = limits.check(address, None) {
        return problem.into_response();
    }
    if parts.headers.contains_key(AUTHORIZATION)
        && let Ok(customer) = Customer::from_request_parts(&mut parts, &()).await
    {
        if let Err(problem) = limits.check(None, Some(&customer.0)) {
            return problem.into_response();
        }
        parts.extensions.insert(customer);
    }
    next.run(Request::from_parts(parts, body)).await
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn forwarded(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn forwarded_for_is_read_only_from_trusted_proxies_and_from_the_right() {
        let clients = ClientAddresses::new(&[ip("10.0.0.1"), ip("10.0.0.2")]);
        // An untrusted peer's header is ignored.
        let h = forwarded(&["203.0.113.9"]);
        assert_eq!(clients.of(ip("198.51.100.4"), &h).0, ip("198.51.100.4"));
        // Through two trusted proxies: the first untrusted entry from the right; what the
        // client wrote to the left of it is not believed.
        let h = forwarded(&["1.1.1.1, 203.0.113.9", "10.0.0.2"]);
        assert_eq!(clients.of(ip("10.0.0.1"), &h).0, ip("203.0.113.9"));
        // A trusted peer without the header, or with garbage: the last address known.
        assert_eq!(clients.of(ip("10.0.0.1"), &HeaderMap::new()).0, ip("10.0.0.1"));
        let h = forwarded(&["not-an-address"]);
        assert_eq!(clients.of(ip("10.0.0.1"), &h).0, ip("10.0.0.1"));
        // IPv4-mapped IPv6 peers are the IPv4 address.
        assert_eq!(
            clients.of(ip("::ffff:198.51.100.4"), &HeaderMap::new()).0,
            ip("198.51.100.4")
        );
    }

    #[test]
    fn ipv6_clients_share_their_slash_64() {
        let a = ClientAddr(ip("2001:db8:1:2:aaaa::1")).key();
        let b = ClientAddr(ip("2001:db8:1:2:bbbb::2")).key();
        assert_eq!(a, b);
        assert_ne!(a, ClientAddr(ip("2001:db8:1:3::1")).key());
        assert_eq!(ClientAddr(ip("192.0.2.1")).key(), ip("192.0.2.1"));
    }

    #[test]
    fn each_bucket_refuses_beyond_its_burst_with_a_retry_after() {
        let limits = RateLimits::new(&Limits {
            customer_per_second: 1,
            customer_burst: 3,
            address_per_second: 1,
            address_burst: 5,
            ..Limits::default()
        });
        let alice = CustomerId::parse("alice").unwrap();
        let bob = CustomerId::parse("bob").unwrap();
        for _ in 0..3 {
            limits.check(None, Some(&alice)).unwrap();
        }
        let refused = limits.check(None, Some(&alice)).unwrap_err();
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.kind, "rate-limited");
        assert_eq!(refused.retry_after, Some(1));
        // Another customer has a bucket of their own.
        limits.check(None, Some(&bob)).unwrap();

        let here = Some(ClientAddr(ip("192.0.2.1")));
        for _ in 0..5 {
            limits.check(here, None).unwrap();
        }
        assert!(limits.check(here, None).is_err());
        limits.check(Some(ClientAddr(ip("192.0.2.2"))), None).unwrap();

        let off = RateLimits::new(&Limits::off());
        assert!(!off.is_on());
        for _ in 0..1000 {
            off.check(here, Some(&alice)).unwrap();
        }
    }
}

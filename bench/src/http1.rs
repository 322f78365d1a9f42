//! A lean HTTP/1.1 client on bare tokio `TcpStream`s: requests written by hand, answers read
//! into one buffer (status line, `Content-Length` or chunked body), keep-alive, no pipelining.
//!
//! The harness's closed loops are meant to measure the target, not the client: reqwest (with
//! hyper's pool, header maps, timeouts and a task per connection) costs about as much CPU per
//! request as a hello-world server does, and on a two-core machine the two compete, so every
//! ratio to hello-world came out compressed toward 1 (issue 17: 64k/s against `wrk`'s 126k/s).
//! [`Client`] keeps one connection per concurrent caller (a caller takes an idle connection
//! from the pool, or opens one, and puts it back when its answer is read), so a closed loop of
//! `n` clients holds `n` connections, each with one request outstanding, as `wrk -c n` does.
//!
//! [`Conn`] is the reader the flash crowd (scenario 3) uses for its joins and status streams.

use std::net::SocketAddr;
use std::sync::Mutex;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The most a response head may take.
const MAX_HEAD: usize = 16 * 1024;

/// A response head: the status, the body's framing, whether the server keeps the connection,
/// and the entity tag (the map readers revalidate with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub content_length: Option<usize>,
    pub chunked: bool,
    /// `Connection: close` (or an HTTP/1.0 answer without keep-alive).
    pub close: bool,
    pub etag: Option<String>,
}

/// A bare HTTP/1.1 connection: requests written by hand, responses read into one buffer.
pub struct Conn {
    pub stream: TcpStream,
    pub buf: Vec<u8>,
}

impl Conn {
    /// Connects with `TCP_NODELAY` (a request is one write; nothing to coalesce).
    pub async fn connect(addr: SocketAddr) -> std::io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            buf: Vec::with_capacity(1024),
        })
    }

    /// Reads more into the buffer; an error if the peer closed.
    pub async fn fill(&mut self) -> anyhow::Result<()> {
        let n = self.stream.read_buf(&mut self.buf).await?;
        anyhow::ensure!(n > 0, "connection closed");
        Ok(())
    }

    pub async fn send(&mut self, request: impl AsRef<[u8]>) -> anyhow::Result<()> {
        self.stream.write_all(request.as_ref()).await?;
        Ok(())
    }

    /// Reads a response head and removes it from the buffer.
    pub async fn read_head(&mut self) -> anyhow::Result<Head> {
        let mut searched: usize = 0;
        let end = loop {
            if let Some(at) = find(&self.buf[searched.saturating_sub(3)..], b"\r\n\r\n") {
                break searched.saturating_sub(3) + at;
            }
            searched = self.buf.len();
            anyhow::ensure!(self.buf.len() < MAX_HEAD, "response head too long");
            self.fill().await?;
        };
        let head = parse_head(&self.buf[..end])?;
        self.buf.drain(..end + 4);
        Ok(head)
    }

    /// The flash crowd's form of [`Conn::read_head`]: status, content length, chunked.
    pub async fn head(&mut self) -> anyhow::Result<(u16, Option<usize>, bool)> {
        let h = self.read_head().await?;
        Ok((h.status, h.content_length, h.chunked))
    }

    /// Reads `length` body bytes.
    pub async fn body(&mut self, length: usize) -> anyhow::Result<Vec<u8>> {
        while self.buf.len() < length {
            self.fill().await?;
        }
        Ok(self.buf.drain(..length).collect())
    }

    /// Reads a whole chunked body (trailers skipped).
    pub async fn chunked_body(&mut self) -> anyhow::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let eol = loop {
                if let Some(eol) = find(&self.buf, b"\r\n") {
                    break eol;
                }
                anyhow::ensure!(self.buf.len() < MAX_HEAD, "chunk size line too long");
                self.fill().await?;
            };
            let line = std::str::from_utf8(&self.buf[..eol]).context("chunk size")?;
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .with_context(|| format!("bad chunk size {line:?}"))?;
            if size == 0 {
                // The last chunk, then trailers up to an empty line.
                self.buf.drain(..eol + 2);
                loop {
                    if let Some(end) = find(&self.buf, b"\r\n") {
                        self.buf.drain(..end + 2);
                        if end == 0 {
                            return Ok(body);
                        }
                    } else {
                        self.fill().await?;
                    }
                }
            }
            while self.buf.len() < eol + 2 + size + 2 {
                self.fill().await?;
            }
            body.extend_from_slice(&self.buf[eol + 2..eol + 2 + size]);
            self.buf.drain(..eol + 2 + size + 2);
        }
    }

    /// Sends `request` and reads the whole answer: its head and body.
    pub async fn exchange(&mut self, request: &[u8]) -> anyhow::Result<(Head, Vec<u8>)> {
        self.send(request).await?;
        let head = self.read_head().await?;
        let body = if head.chunked {
            self.chunked_body().await?
        } else if let Some(n) = head.content_length {
            self.body(n).await?
        } else if head.status == 204 || head.status == 304 || (100..200).contains(&head.status) {
            Vec::new()
        } else {
            // Delimited by the close: read to the end.
            let mut rest = std::mem::take(&mut self.buf);
            self.stream.read_to_end(&mut rest).await?;
            return Ok((Head { close: true, ..head }, rest));
        };
        Ok((head, body))
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Parses a response head (without its final blank line).
pub fn parse_head(head: &[u8]) -> anyhow::Result<Head> {
    let mut lines = head.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let status_line = lines.next().context("no status line")?;
    let mut parts = status_line.splitn(3, |&b| b == b' ');
    let version = parts.next().unwrap_or_default();
    let status = parts
        .next()
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.parse().ok())
        .context("no status in the status line")?;
    let mut head = Head {
        status,
        content_length: None,
        chunked: false,
        close: version == b"HTTP/1.0",
        etag: None,
    };
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name.eq_ignore_ascii_case(b"content-length") {
            head.content_length = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            head.chunked = value.eq_ignore_ascii_case(b"chunked");
        } else if name.eq_ignore_ascii_case(b"etag") {
            head.etag = std::str::from_utf8(value).ok().map(str::to_owned);
        } else if name.eq_ignore_ascii_case(b"connection") {
            if value.eq_ignore_ascii_case(b"close") {
                head.close = true;
            } else if value.eq_ignore_ascii_case(b"keep-alive") {
                head.close = false;
            }
        }
    }
    Ok(head)
}

/// Keep-alive connections to one server, one per concurrent caller.
pub struct Client {
    addr: SocketAddr,
    host: String,
    idle: Mutex<Vec<Conn>>,
}

impl Client {
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            host: addr.to_string(),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A request's bytes: `method path`, `Host`, the extra `headers` (`name: value` each), and
    /// the body with its `Content-Length` (none for an empty body on `GET`).
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
        let mut r = Vec::with_capacity(128 + body.len());
        r.extend_from_slice(format!("{method} {path} HTTP/1.1\r\nhost: {}\r\n", self.host).as_bytes());
        for (name, value) in headers {
            r.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        if !body.is_empty() || method != "GET" {
            r.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
        }
        r.extend_from_slice(b"\r\n");
        r.extend_from_slice(body);
        r
    }

    /// Sends `request` (from [`Client::request`]) on an idle connection or a new one and
    /// returns the status and body. A reused connection the server closed meanwhile is retried
    /// once on a new one (only when nothing of the answer arrived).
    pub async fn send(&self, request: &[u8]) -> anyhow::Result<(u16, Vec<u8>)> {
        let (head, body) = self.exchange(request).await?;
        Ok((head.status, body))
    }

    /// [`Client::send`], answering the whole head.
    pub async fn exchange(&self, request: &[u8]) -> anyhow::Result<(Head, Vec<u8>)> {
        let idle = self.idle.lock().expect("idle connections").pop();
        let (mut conn, reused) = match idle {
            Some(conn) => (conn, true),
            None => (Conn::connect(self.addr).await?, false),
        };
        let answer = match conn.exchange(request).await {
            Err(e) if reused && conn.buf.is_empty() => {
                drop(e);
                conn = Conn::connect(self.addr).await?;
                conn.exchange(request).await
            }
            other => other,
        };
        let (head, body) = answer?;
        if !head.close && conn.buf.is_empty() {
            self.idle.lock().expect("idle connections").push(conn);
        }
        Ok((head, body))
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<(u16, Vec<u8>)> {
        self.send(&self.request("GET", path, &[], b"")).await
    }

    /// Connections currently idle in the pool.
    pub fn idle(&self) -> usize {
        self.idle.lock().expect("idle connections").len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_parsed() {
        let h = parse_head(b"HTTP/1.1 201 Created\r\ncontent-type: application/json\r\nContent-Length: 42").unwrap();
        assert_eq!(
            h,
            Head {
                status: 201,
                content_length: Some(42),
                chunked: false,
                close: false,
                etag: None,
            }
        );
        let h = parse_head(b"HTTP/1.1 304 Not Modified\r\nETag: W/\"6:17\"").unwrap();
        assert_eq!(h.etag.as_deref(), Some("W/\"6:17\""));
        let h = parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close").unwrap();
        assert!(h.chunked && h.close && h.content_length.is_none());
        assert!(parse_head(b"HTTP/1.0 200 OK").unwrap().close);
        assert!(parse_head(b"garbage").is_err());
    }

    #[tokio::test]
    async fn chunked_and_sized_bodies_are_read_on_one_connection() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let mut seen = Vec::new();
            let answers: [&[u8]; 2] = [
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nHello\r\n8;x=y\r\n, World!\r\n0\r\n\r\n",
                b"HTTP/1.1 409 Conflict\r\ncontent-length: 3\r\n\r\nno!",
            ];
            for answer in answers {
                loop {
                    let n = s.read(&mut buf).await.unwrap();
                    seen.extend_from_slice(&buf[..n]);
                    if find(&seen, b"\r\n\r\n").is_some() {
                        break;
                    }
                }
                seen.clear();
                s.write_all(answer).await.unwrap();
            }
        });
        let client = Client::new(addr);
        assert_eq!(client.get("/a").await.unwrap(), (200, b"Hello, World!".to_vec()));
        assert_eq!(client.idle(), 1);
        assert_eq!(client.get("/b").await.unwrap(), (409, b"no!".to_vec()));
        assert_eq!(client.idle(), 1, "the same connection, kept alive");
    }
}

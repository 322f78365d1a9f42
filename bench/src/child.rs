//! FrontRow under test in a child process: the real `frontrow serve` binary on its embedded
//! defaults (SQLite journal, SQLite ledger, tantivy) in a temporary data directory.
//!
//! The flash crowd needs this: in-process, both ends of every fan's connection count against
//! one process's file-descriptor limit, and the server's memory cannot be told apart from the
//! harness's. In a child the server's descriptors and its `VmRSS` (`/proc/<pid>/status`) are
//! its own. The child inherits the harness's `RLIMIT_NOFILE` (raised before the spawn), gets
//! its settings from a TOML file written next to its data (listen on `127.0.0.1:0`, the bench
//! organizer key, a token secret the harness also holds to mint customer tokens, no sample
//! event), and says where it listens on its first line of output. After [`ChildFrontRow::stop`]
//! (SIGTERM, then SIGKILL if it has not exited within [`STOP_GRACE`]) the harness opens the
//! child's journal file for its checks. Dropping a running child kills it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use frontrow::Settings;
use frontrow_http::auth::Auth;
use frontrow_journal::Journal;
use rand::Rng;
use secrecy::SecretString;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::frontrow::ORGANIZER_KEY;

/// How long the child may take to say where it listens.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a graceful stop may take before the child is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(20);
/// The child's journal partitions (written into its settings and used to open its journal).
const PARTITIONS: u32 = 8;

/// Where the `frontrow` binary is when none is named: next to the running executable
/// (`target/<profile>/frontrow` beside `target/<profile>/frontrow-bench`), or one directory up
/// from a test executable (`target/<profile>/deps/…`).
pub fn default_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("locating the running executable")?;
    let dir = exe.parent().context("the executable has no directory")?;
    let mut candidates = vec![dir.join("frontrow")];
    if dir.file_name().is_some_and(|n| n == "deps")
        && let Some(up) = dir.parent()
    {
        candidates.push(up.join("frontrow"));
    }
    candidates.iter().find(|p| p.is_file()).cloned().with_context(|| {
        format!(
            "no frontrow binary at {} (build it with `cargo build [--release] --bin frontrow`, or pass --frontrow-bin)",
            candidates[0].display()
        )
    })
}

/// A `frontrow serve` child process.
pub struct ChildFrontRow {
    pub addr: SocketAddr,
    pub pid: u32,
    /// Mints customer tokens the child accepts (the same token secret).
    pub auth: Arc<Auth>,
    pub binary: PathBuf,
    child: Option<Child>,
    data_dir: PathBuf,
    /// Holds the data directory until the harness is done with the journal.
    dir: tempfile::TempDir,
}

impl ChildFrontRow {
    /// Spawns `binary serve` on a new data directory and waits until it listens.
    pub async fn start(binary: &Path) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir().context("creating a data directory")?;
        let data_dir = dir.path().join("data");
        let secret: String = {
            let mut rng = rand::rng();
            (0..48).map(|_| rng.sample(rand::distr::Alphanumeric) as char).collect()
        };
        let config = dir.path().join("frontrow.toml");
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:0\"\npartitions = {PARTITIONS}\njournal = \"sqlite\"\nsearch = \"tantivy\"\n\
                 sample_event = false\ndemo = true\ntoken_secret = \"{secret}\"\n\n[organizers]\nbench = \"{ORGANIZER_KEY}\"\n\n\
                 # The crowd comes from one loopback address: no rate limits, no stream caps.\n\
                 [limits]\ncustomer_per_second = 0\naddress_per_second = 0\nsse_per_node = 0\nsse_per_customer = 0\nsse_per_address = 0\n"
            ),
        )
        .context("writing the child's settings")?;
        let (child, pid, addr) = spawn(binary, &config, &data_dir).await?;
        Ok(Self {
            addr,
            pid,
            auth: Arc::new(Auth::new(SecretString::from(secret), [])),
            binary: binary.to_path_buf(),
            child: Some(child),
            data_dir,
            dir,
        })
    }

    /// Starts the stopped (or killed) child again on the same data directory and settings; it
    /// listens on a new port.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        anyhow::ensure!(self.child.is_none(), "stop the child before restarting it");
        let config = self.dir.path().join("frontrow.toml");
        let (child, pid, addr) = spawn(&self.binary, &config, &self.data_dir).await?;
        (self.child, self.pid, self.addr) = (Some(child), pid, addr);
        Ok(())
    }

    /// Kills the child with SIGKILL (no graceful stop, no last snapshot).
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        child.start_kill().context("killing the child")?;
        child.wait().await.context("waiting for the killed child")?;
        Ok(())
    }

    /// Bytes of every file under the child's data directory.
    pub fn data_dir_bytes(&self) -> u64 {
        fn walk(dir: &Path) -> u64 {
            let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
            entries
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => walk(&e.path()),
                    Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
                    Err(_) => 0,
                })
                .sum()
        }
        walk(&self.data_dir)
    }

    /// The child's resident memory, KiB (`VmRSS`), or `None` once it is gone.
    pub fn rss_kib(&self) -> Option<u64> {
        proc_status_kib(self.pid, "VmRSS:")
    }

    /// The child's soft `RLIMIT_NOFILE` (from `/proc/<pid>/limits`).
    pub fn fd_limit(&self) -> Option<u64> {
        let limits = std::fs::read_to_string(format!("/proc/{}/limits", self.pid)).ok()?;
        let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse().ok()
    }

    /// Stops the child: SIGTERM (a graceful stop: writers finish their batch, snapshots), then
    /// SIGKILL if it has not exited within [`STOP_GRACE`]. Returns whether it stopped gracefully
    /// with success.
    pub async fn stop(&mut self) -> anyhow::Result<bool> {
        let Some(mut child) = self.child.take() else {
            return Ok(false);
        };
        if let Some(pid) = rustix::process::Pid::from_raw(self.pid as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        match tokio::time::timeout(STOP_GRACE, child.wait()).await {
            Ok(status) => Ok(status.context("waiting for the child")?.success()),
            Err(_) => {
                tracing::warn!(pid = self.pid, "frontrow did not stop within the grace period: killed");
                child.start_kill().context("killing the child")?;
                child.wait().await.context("waiting for the killed child")?;
                Ok(false)
            }
        }
    }

    /// The child's journal, opened here once it has stopped (every acknowledged write is in it:
    /// the journal is fsynced per group commit).
    pub async fn journal(&self) -> anyhow::Result<Arc<dyn Journal>> {
        anyhow::ensure!(self.child.is_none(), "stop the child before opening its journal");
        let settings = Settings {
            data_dir: self.data_dir.clone(),
            partitions: PARTITIONS,
            journal: frontrow::settings::JournalChoice::Sqlite,
            ..Settings::default()
        };
        frontrow::app::open_journal(&settings).await
    }
}

/// Spawns `binary serve` with `config` on `data_dir` and waits until it says where it listens.
async fn spawn(binary: &Path, config: &Path, data_dir: &Path) -> anyhow::Result<(Child, u32, SocketAddr)> {
    let mut command = clean_command(binary);
    command
        .env(
            "FRONTROW_LOG",
            std::env::var("FRONTROW_LOG").unwrap_or_else(|_| "warn,sqlx=error".into()),
        )
        .arg("--config")
        .arg(config)
        .arg("--data-dir")
        .arg(data_dir)
        .arg("serve")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let pid = child.id().context("the child has no pid")?;
    let stdout = child.stdout.take().context("the child's stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let addr = tokio::time::timeout(START_TIMEOUT, async {
        while let Some(line) = lines.next_line().await? {
            if let Some(rest) = line.strip_prefix("FrontRow listening on http://") {
                return rest.trim().parse::<SocketAddr>().context("the child's address");
            }
        }
        anyhow::bail!("the child ended before it listened")
    })
    .await;
    let addr = match addr {
        Ok(Ok(addr)) => addr,
        failed => {
            let _ = child.start_kill();
            let status = child.wait().await.ok();
            let cause = match failed {
                Ok(Err(e)) => e,
                _ => anyhow::anyhow!("it did not listen within {START_TIMEOUT:?}"),
            };
            return Err(cause.context(format!("{} serve did not start (exit: {status:?})", binary.display())));
        }
    };
    // Keep reading its output, so that a full pipe never blocks it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, pid, addr))
}

/// A command running `binary` without the harness's own `FRONTROW_*` variables: they must not
/// reach the server under test (a `FRONTROW_JOURNAL=kafka://…` would change what is measured).
pub fn clean_command(binary: &Path) -> Command {
    let mut command = Command::new(binary);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("FRONTROW_") {
            command.env_remove(&key);
        }
    }
    command
}

/// A `KiB` field of `/proc/<pid>/status`.
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// CPU seconds a process has used so far, user + system (`/proc/<pid>/stat`, all its threads).
/// `/proc` counts in `USER_HZ` ticks, which Linux fixes at 100 for user space.
pub fn proc_cpu_s(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after its `)` are plain.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// The machine's one-minute load average (`/proc/loadavg`).
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_resident_size_and_cpu_time() {
        let pid = std::process::id();
        assert!(proc_status_kib(pid, "VmRSS:").is_some_and(|kib| kib > 0));
        let before = proc_cpu_s(pid).expect("cpu time of this process");
        // Burn a little CPU so the tick counter moves.
        let mut x = 0u64;
        let until = std::time::Instant::now() + Duration::from_millis(50);
        while std::time::Instant::now() < until {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(proc_cpu_s(pid).expect("cpu time") >= before);
        assert!(load_average().is_some_and(|l| l >= 0.0));
        assert_eq!(proc_cpu_s(u32::MAX), None);
    }
}

//! The projections' share of the CPU in a node that also serves requests (`frontrow serve`).
//!
//! The ledger and search projectors run on a runtime of their own, and its threads, the
//! ledger's SQLite connection threads and tantivy's indexing threads run `nice` steps below the
//! request path (Linux: `setpriority` per thread). On a machine with CPU to spare that changes
//! nothing; on a saturated one the scheduler gives the requests their CPU first, and the
//! projections fall behind and catch up in bigger batches (their reads are eventually
//! consistent anyway). A `nice` of 0 keeps the runtime apart but at the same priority.

use std::collections::HashSet;
use std::time::Duration;

use tokio::runtime::{Handle, Runtime};
use tracing::{debug, warn};

/// Names of the threads, besides the runtime's own, that do the projections' work: the SQLite
/// ledger's connection threads ([`frontrow_projector::LEDGER_THREAD`]) and tantivy's indexers.
const PROJECTION_THREADS: [&str; 2] = [frontrow_projector::LEDGER_THREAD, "thrd-tantivy-index"];

/// How often threads started since are looked for (a pool reconnects, an index is rebuilt).
const RESCAN: Duration = Duration::from_secs(2);

/// The projections' runtime: one worker thread at the lower priority.
pub struct Budget {
    runtime: Option<Runtime>,
    nice: i32,
}

impl Budget {
    /// A runtime of one worker for the projections, `nice` steps below the thread that starts
    /// each of its threads (at most to 19).
    pub fn new(nice: i32) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("projections")
            .enable_all()
            .on_thread_start(move || lower_current(nice))
            .build()?;
        Ok(Self {
            runtime: Some(runtime),
            nice,
        })
    }

    /// Where the projectors' tasks are spawned.
    pub fn handle(&self) -> Handle {
        self.runtime
            .as_ref()
            .expect("a budget's runtime lives as long as it")
            .handle()
            .clone()
    }

    /// Keeps lowering the projections' other threads (named in `PROJECTION_THREADS`) as they start,
    /// until the runtime ends.
    pub fn watch_threads(&self) {
        let nice = self.nice;
        if nice == 0 {
            return;
        }
        self.handle().spawn(async move {
            let mut lowered = HashSet::new();
            loop {
                lower_named(&PROJECTION_THREADS, nice, &mut lowered);
                tokio::time::sleep(RESCAN).await;
            }
        });
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        // Dropped from async code at shutdown: do not block on tasks still parked there.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Moves thread `tid` `steps` nice steps down from where it is (at most to 19).
#[cfg(target_os = "linux")]
fn lower(tid: Option<rustix::process::Pid>, steps: i32) -> std::io::Result<()> {
    let now = rustix::process::getpriority_process(tid)?;
    rustix::process::setpriority_process(tid, (now + steps).min(19)).map_err(std::io::Error::from)
}

/// Lowers the calling thread (on Linux `setpriority` of a thread id is that thread's alone).
fn lower_current(nice: i32) {
    if nice == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    if let Err(e) = lower(Some(rustix::thread::gettid()), nice) {
        warn!(error = %e, nice, "could not lower the projections' priority");
    }
}

/// Lowers every thread of this process whose name starts with one of `prefixes` and that is not
/// in `lowered` yet; adds them there.
///
/// One scan can miss a thread: Linux lists `/proc/self/task` by position, and a thread that
/// exits while the list is read shifts the ones after it. That is why [`Budget::watch_threads`]
/// scans again every [`RESCAN`].
fn lower_named(prefixes: &[&str], nice: i32, lowered: &mut HashSet<i32>) {
    #[cfg(target_os = "linux")]
    {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return;
        };
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<i32>().ok()) else {
                continue;
            };
            if lowered.contains(&tid) {
                continue;
            }
            let Ok(name) = std::fs::read_to_string(task.path().join("comm")) else {
                continue;
            };
            if !prefixes.iter().any(|p| name.starts_with(p)) {
                continue;
            }
            match lower(rustix::process::Pid::from_raw(tid), nice) {
                Ok(()) => {
                    debug!(tid, thread = name.trim_end(), nice, "projection thread lowered");
                    lowered.insert(tid);
                }
                Err(e) => warn!(tid, error = %e, "could not lower a projection thread"),
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (prefixes, nice, lowered);
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn nice_of(tid: i32) -> i32 {
        // Field 19 of /proc/<pid>/task/<tid>/stat is the nice value; the name (field 2) may hold
        // spaces, so count from the closing parenthesis.
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[test]
    fn the_runtime_and_the_named_threads_run_lower_and_the_rest_do_not() {
        let me = rustix::thread::gettid().as_raw_nonzero().get();
        let before = nice_of(me);
        let want = (before + 3).min(19);
        let budget = Budget::new(3).unwrap();
        let worker = budget
            .handle()
            .block_on(async { tokio::task::spawn(async { rustix::thread::gettid() }).await.unwrap() });
        assert_eq!(nice_of(worker.as_raw_nonzero().get()), want, "the runtime's worker");

        let (tx, rx) = std::sync::mpsc::channel();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let named = std::thread::Builder::new()
            .name(format!("{}-test", frontrow_projector::LEDGER_THREAD))
            .spawn(move || {
                tx.send(rustix::thread::gettid()).unwrap();
                wait.recv().unwrap();
            })
            .unwrap();
        let tid = rx.recv().unwrap().as_raw_nonzero().get();
        let mut lowered = HashSet::new();
        // Other tests' threads end while this one scans, so a scan may miss the thread (see
        // `lower_named`); like the watcher, scan again, a bounded number of times.
        for _ in 0..100 {
            lower_named(&PROJECTION_THREADS, 3, &mut lowered);
            if lowered.contains(&tid) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(lowered.contains(&tid), "the ledger thread was found in 100 scans");
        assert_eq!(nice_of(tid), want, "a ledger thread");
        assert_eq!(nice_of(me), before, "this thread keeps its priority");
        lower_named(&PROJECTION_THREADS, 3, &mut lowered);
        assert_eq!(nice_of(tid), want, "lowered once, not twice");
        done.send(()).unwrap();
        named.join().unwrap();
    }
}

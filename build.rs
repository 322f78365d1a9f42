//! Compiles the source tree's git commit into the binary (`frontrow --version`,
//! `frontrow::BUILD_COMMIT`), so a binary always says what it was built from: the commit HEAD
//! named when the build script last ran, with `-dirty` appended when the sources the binary is
//! built from (the crates, the manifests, this script) had uncommitted changes. It reruns when
//! HEAD moves and when any of those sources changes; tests, docs and deploy files do not count.

use std::process::Command;

/// What the `frontrow` binary is compiled from, relative to the workspace root.
const SOURCES: &[&str] = &[
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    "src",
    "schema",
    "journal",
    "http",
    "command",
    "query",
    "search",
    "projector",
    "analytics",
    "web",
];

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"])
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    // `--no-optional-locks`: looking must not rewrite the index (that would rerun this script).
    let mut status = vec![
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
    ];
    status.extend(SOURCES);
    let dirty = git(&status).is_some_and(|changes| !changes.is_empty());
    let suffix = if dirty { "-dirty" } else { "" };
    println!("cargo:rustc-env=FRONTROW_GIT_COMMIT={commit}{suffix}");
    // A new commit or a checkout moves HEAD or the ref it names.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]).filter(|s| !s.is_empty()) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]).filter(|s| !s.is_empty()) {
            println!("cargo:rerun-if-changed={dir}/{head}");
        }
    }
    for source in SOURCES {
        println!("cargo:rerun-if-changed={source}");
    }
}

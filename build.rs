//! Compiles the source tree's git commit into the binary (`frontrow --version`,
//! `frontrow::BUILD_COMMIT`), so a binary always says what it was built from: the commit HEAD
//! named when the build script last ran (it reruns when HEAD moves). Uncommitted changes are
//! not detected.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=FRONTROW_GIT_COMMIT={commit}");
    // A new commit or a checkout moves HEAD or the ref it names.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{head}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

//! The deployment files cannot run here (no container engine, no systemd as init), so this
//! checks them against what the binary accepts: every `FRONTROW_*` variable they set is one the
//! binary reads, every literal value parses as that setting, and every role they start is a
//! subcommand of the binary.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use frontrow::Settings;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The files that start FrontRow somewhere.
fn deploy_files() -> Vec<(String, String)> {
    let mut files = vec![
        "deploy/compose/compose.yaml".to_owned(),
        "deploy/compose/Dockerfile".to_owned(),
    ];
    for entry in std::fs::read_dir(Path::new(ROOT).join("deploy/systemd")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".service") {
            files.push(format!("deploy/systemd/{name}"));
        }
    }
    files
        .into_iter()
        .map(|f| (read(&f), f))
        .map(|(text, f)| (f, text))
        .collect()
}

/// Every `FRONTROW_NAME` set outside comments in `text`, with the literal value given to it
/// where there is one.
fn variables(text: &str) -> Vec<(String, Option<String>)> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| format!("{}\n", without_references(l)))
        .collect();
    let mut found = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("FRONTROW_") {
        let tail = &rest[at..];
        let len = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        let name = tail[..len].to_owned();
        let after = tail[len..].trim_start_matches([':', '=', ' ']);
        let value = after
            .split(['\n', ' '])
            .next()
            .map(|v| v.trim_matches('"').to_owned())
            .filter(|v| !v.is_empty() && !v.starts_with('$') && !v.starts_with('#'));
        found.push((name, value));
        rest = &tail[len..];
    }
    found
}

/// `line` with every `${...}` (a variable of the deployer's, with its default or message) cut
/// to `$`: it sets nothing itself.
fn without_references(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        out.push('$');
        rest = rest[at..].find('}').map_or("", |end| &rest[at + end + 1..]);
    }
    out.push_str(rest);
    out
}

/// The variables the binary reads: one per setting, and the two read before the settings.
fn known() -> BTreeSet<String> {
    let settings = serde_json::to_value(Settings::default()).unwrap();
    let mut names: BTreeSet<String> = settings
        .as_object()
        .unwrap()
        .keys()
        .map(|k| format!("FRONTROW_{}", k.to_uppercase()))
        .collect();
    names.extend(["FRONTROW_CONFIG", "FRONTROW_LOG", "FRONTROW_LOG_FORMAT"].map(String::from));
    names
}

#[test]
#[expect(clippy::result_large_err, reason = "figment's Jail API returns figment::Error")]
fn deployment_files_set_only_variables_the_binary_reads() {
    let known = known();
    let mut checked = 0;
    for (file, text) in deploy_files() {
        for (name, value) in variables(&text) {
            assert!(
                known.contains(&name),
                "{file} sets {name}, which frontrow does not read"
            );
            checked += 1;
            let Some(value) = value else { continue };
            if name == "FRONTROW_CONFIG" || name.starts_with("FRONTROW_LOG") {
                continue;
            }
            // The literal value parses as that setting.
            figment::Jail::expect_with(|jail| {
                jail.set_env(&name, &value);
                Settings::load(None)
                    .map(|_| ())
                    .map_err(|e| format!("{file}: {name}={value}: {e}").into())
            });
        }
    }
    assert!(checked >= 10, "only {checked} variables found: is the scan broken?");
}

#[test]
fn the_scan_finds_what_a_unit_sets() {
    let found = variables("Environment=FRONTROW_DATA_DIR=/var/lib/x\n  FRONTROW_PARTITIONS: \"8\"\n${FRONTROW_X:-y}");
    assert_eq!(
        found,
        vec![
            ("FRONTROW_DATA_DIR".into(), Some("/var/lib/x".into())),
            ("FRONTROW_PARTITIONS".into(), Some("8".into())),
        ]
    );
    assert_eq!(without_references("A: ${FRONTROW_X:?set FRONTROW_X (32+)} b"), "A: $ b");
    assert!(!known().contains("FRONTROW_X"));
}

/// The role a line starts: `frontrow ROLE`, `command: ["ROLE"]` or `CMD ["ROLE"]`.
fn roles(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("ExecStart=/usr/local/bin/frontrow ")
                .or_else(|| line.strip_prefix("command: "))
                .or_else(|| line.strip_prefix("CMD "))?;
            let role = rest.trim_matches(|c| c == '[' || c == ']' || c == '"' || c == ' ');
            Some(role.split([' ', '"']).next().unwrap_or(role).to_owned())
        })
        .collect()
}

#[test]
fn deployment_files_start_roles_the_binary_has() {
    let mut all = Vec::new();
    for (file, text) in deploy_files() {
        for role in roles(&text) {
            let out = Command::new(env!("CARGO_BIN_EXE_frontrow"))
                .args([role.as_str(), "--help"])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{file} starts `frontrow {role}`, which the binary does not have"
            );
            all.push(role);
        }
    }
    for role in ["command", "query", "projector", "serve"] {
        assert!(
            all.iter().any(|r| r == role),
            "no deployment file starts the {role} role"
        );
    }
}

#[test]
fn the_dashboard_uses_only_metrics_the_nodes_export() {
    let dashboard: serde_json::Value = serde_json::from_str(&read("deploy/grafana/frontrow-dashboard.json")).unwrap();
    let known: BTreeSet<&str> = frontrow::metrics::METRICS.iter().map(|(name, ..)| *name).collect();
    let mut used = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            for name in metric_names(expr) {
                let base = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| name.strip_suffix(s))
                    .unwrap_or(&name);
                assert!(
                    known.contains(base),
                    "panel {} uses {name}, which no node exports",
                    panel["title"]
                );
                used += 1;
            }
        }
    }
    assert!(used >= 10);
}

/// The `frontrow_*` metric names in a PromQL expression.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("frontrow_") {
        let tail = &rest[at..];
        let len = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        names.push(tail[..len].to_owned());
        rest = &tail[len..];
    }
    names
}

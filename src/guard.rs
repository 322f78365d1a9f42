//! Startup checks that keep a careless configuration off the internet.
//!
//! - **Demo mode only on loopback.** `/demo/tokens` mints a token for any customer id, so a
//!   server with demo mode on lets anyone act as anyone. A process that serves the command API
//!   (`serve`, `command`) on an address other than loopback with `demo = true` refuses to start
//!   and says how to fix it; it never turns demo mode off by itself, so what runs is what was
//!   configured.
//! - **Secrets long enough to be secrets.** A configured `token_secret` or `webhook_secret`, or
//!   an organizer API key, shorter than [`MIN_SECRET_CHARS`] is refused at startup.
//!
//! [`check_exposure`] and [`check_secrets`] are called by `App::build_role` and by the binary
//! before it binds its listener.

use std::net::SocketAddr;

use secrecy::{ExposeSecret, SecretString};

use crate::app::Role;
use crate::settings::Settings;

/// The shortest secret or API key accepted from the configuration: 32 characters (a generated
/// one has 48 random hex digits behind its prefix).
pub const MIN_SECRET_CHARS: usize = 32;

/// Refuses demo mode on a non-loopback address for the roles that mount the demo routes.
pub fn check_exposure(settings: &Settings, role: Role) -> anyhow::Result<()> {
    let mounts_demo = matches!(role, Role::All | Role::Command);
    if settings.demo && mounts_demo && !settings.listen.ip().is_loopback() {
        anyhow::bail!("{}", demo_refusal(settings.listen));
    }
    Ok(())
}

fn demo_refusal(listen: SocketAddr) -> String {
    format!(
        "refusing to start: demo mode is on and the API would listen on {listen}, which is not a \
         loopback address. Demo mode's POST /demo/tokens mints a token for any customer, so anyone \
         who can reach the server could read and cancel anyone's bookings. Set demo = false \
         (FRONTROW_DEMO=false) to serve on {listen}, or listen on 127.0.0.1 to try the demo"
    )
}

/// Refuses configured secrets and organizer keys shorter than [`MIN_SECRET_CHARS`].
pub fn check_secrets(settings: &Settings) -> anyhow::Result<()> {
    let short = |name: &str, secret: &SecretString| -> anyhow::Result<()> {
        let chars = secret.expose_secret().chars().count();
        anyhow::ensure!(
            chars >= MIN_SECRET_CHARS,
            "refusing to start: {name} has {chars} characters; configured secrets and API keys need \
             at least {MIN_SECRET_CHARS} (e.g. `openssl rand -hex 24`), or leave it unset to have one generated"
        );
        Ok(())
    };
    if let Some(secret) = &settings.token_secret {
        short("token_secret", secret)?;
    }
    if let Some(secret) = &settings.webhook_secret {
        short("webhook_secret", secret)?;
    }
    for (organizer, key) in &settings.organizers {
        short(&format!("the API key of organizer {organizer:?}"), key)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(listen: &str, demo: bool) -> Settings {
        Settings {
            listen: listen.parse().unwrap(),
            demo,
            ..Settings::default()
        }
    }

    #[test]
    fn demo_mode_is_refused_off_loopback_for_the_roles_that_mount_it() {
        for listen in ["0.0.0.0:8080", "[::]:8080", "192.0.2.7:8080"] {
            for role in [Role::All, Role::Command] {
                let err = check_exposure(&on(listen, true), role).unwrap_err().to_string();
                assert!(err.contains("demo mode is on"), "{err}");
                assert!(err.contains("FRONTROW_DEMO=false"), "{err}");
            }
            // No demo routes there, or demo off: nothing to refuse.
            check_exposure(&on(listen, true), Role::Query).unwrap();
            check_exposure(&on(listen, true), Role::Projector).unwrap();
            check_exposure(&on(listen, false), Role::All).unwrap();
        }
        for listen in ["127.0.0.1:8080", "127.0.0.2:0", "[::1]:8080"] {
            check_exposure(&on(listen, true), Role::All).unwrap();
        }
    }

    #[test]
    fn the_default_settings_are_the_loopback_demo() {
        check_exposure(&Settings::default(), Role::All).unwrap();
        check_secrets(&Settings::default()).unwrap();
    }

    #[test]
    fn short_configured_secrets_and_keys_are_refused() {
        let long = SecretString::from("x".repeat(MIN_SECRET_CHARS));
        let short = SecretString::from("x".repeat(MIN_SECRET_CHARS - 1));
        let mut s = Settings {
            token_secret: Some(long.clone()),
            webhook_secret: Some(long.clone()),
            ..Settings::default()
        };
        s.organizers.insert("acme".into(), long.clone());
        check_secrets(&s).unwrap();

        let with = |f: &dyn Fn(&mut Settings)| {
            let mut s = s.clone();
            f(&mut s);
            check_secrets(&s).unwrap_err().to_string()
        };
        assert!(with(&|s| s.token_secret = Some(short.clone())).contains("token_secret has 31 characters"));
        assert!(with(&|s| s.webhook_secret = Some(short.clone())).contains("webhook_secret"));
        let err = with(&|s| {
            s.organizers.insert("other".into(), short.clone());
        });
        assert!(err.contains("organizer \"other\""), "{err}");
        // The message never shows the secret itself.
        assert!(!err.contains(&"x".repeat(MIN_SECRET_CHARS - 1)), "{err}");
    }
}

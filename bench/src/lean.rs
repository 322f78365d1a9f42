//! A [`Race`]'s requests on the lean client ([`crate::http1`]) instead of reqwest: the same
//! requests (bearer token, `Idempotency-Key`, JSON body), the same classification and the
//! same race log, so the checks after the race are unchanged. The database baselines' phases
//! and FrontRow's explicit reserves (max, pay, half max) use these, so the reserve ratios
//! compare one client against itself. FrontRow's map reads use the same client directly
//! (`scenarios::map_job`); its other phases still go through reqwest.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::http1::Client;
use crate::load::{Job, Outcome};
use crate::workload::{Kind, Payer, Race, Won, pay_job};

/// A race on the lean client: the race's target, tokens and log, `http`'s connections.
#[derive(Clone)]
pub struct LeanRace {
    pub race: Race,
    pub http: Arc<Client>,
}

impl LeanRace {
    /// A lean client for `race` (its base must be `http://<addr>`).
    pub fn new(race: Race) -> anyhow::Result<Self> {
        let addr = race
            .base
            .strip_prefix("http://")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("not a loopback http://addr base: {}", race.base))?;
        Ok(Self {
            race,
            http: Arc::new(Client::new(addr)),
        })
    }

    /// Explicit seats: request `i` asks for `picks[i]` (as [`Race::reserve_explicit`]).
    pub fn reserve_explicit(&self, picks: Arc<Vec<Vec<String>>>) -> Job {
        let this = self.clone();
        let path: Arc<str> = format!("/events/{}/reservations", self.race.event).into();
        Arc::new(move |i| {
            let (this, path) = (this.clone(), path.clone());
            let seats = &picks[i as usize % picks.len()];
            let body = json!({ "seats": seats }).to_string();
            Box::pin(async move { this.reserve(i, &path, body).await })
        })
    }

    async fn reserve(&self, i: u64, path: &str, body: String) -> Outcome {
        let customer = i as usize % self.race.tokens.len();
        let bearer = format!("Bearer {}", self.race.tokens[customer]);
        let key = uuid::Uuid::new_v4().to_string();
        let request = self.http.request(
            "POST",
            path,
            &[
                ("authorization", &bearer),
                ("idempotency-key", &key),
                ("content-type", "application/json"),
            ],
            body.as_bytes(),
        );
        let Ok((status, body)) = self.http.send(&request).await else {
            return Outcome::Error;
        };
        let Ok(answer) = serde_json::from_slice::<Value>(&body) else {
            return Outcome::Error;
        };
        self.race.record_answer(customer, status, &answer)
    }

    /// Pays the acknowledged reservations, request `i` paying `won[i]` (as [`Race::pay`]).
    pub fn pay(&self, won: Arc<Vec<Won>>) -> Job {
        pay_job(self, won)
    }
}

impl Payer for LeanRace {
    async fn pay_one(&self, won: &Won) -> Outcome {
        let bearer = format!("Bearer {}", self.race.tokens[won.customer]);
        let request = match self.race.kind {
            Kind::Frontrow => {
                let body = json!({ "event_id": self.race.event, "reservation_id": won.reservation }).to_string();
                self.http.request(
                    "POST",
                    "/demo/payments",
                    &[("authorization", &bearer), ("content-type", "application/json")],
                    body.as_bytes(),
                )
            }
            Kind::NaivePg | Kind::RedisLock => self.http.request(
                "POST",
                &format!("/events/{}/reservations/{}/pay", self.race.event, won.reservation),
                &[("authorization", &bearer)],
                b"",
            ),
        };
        let Ok((status, body)) = self.http.send(&request).await else {
            return Outcome::Error;
        };
        let Ok(answer) = serde_json::from_slice::<Value>(&body) else {
            return Outcome::Error;
        };
        self.race.record_payment(won, status, &answer)
    }
}

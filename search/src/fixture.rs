//! A deterministic catalogue of realistic events for tests and benchmarks.
//!
//! Artists from many languages and scripts (Latin with and without accents, Korean, Japanese,
//! Chinese, Persian, Arabic, Cyrillic, Greek) tour cities around the world; [`events`] spreads
//! `n` events over them with a fixed pseudo-random sequence, so every run indexes the same
//! documents. The first events pin down the cases the relevance tests name (Coldplay in
//! Mumbai, BTS in Seoul, ...).

use chrono::{DateTime, Duration, TimeZone, Utc};
use frontrow_schema::EventId;

use crate::index::EventDoc;

/// An artist: name, tour title and genres.
pub struct Artist {
    pub name: &'static str,
    pub tour: &'static str,
    pub tags: &'static [&'static str],
}

const fn a(name: &'static str, tour: &'static str, tags: &'static [&'static str]) -> Artist {
    Artist { name, tour, tags }
}

/// Every artist of the fixture.
pub const ARTISTS: &[Artist] = &[
    a("Taylor Swift", "The Eras Tour", &["pop", "country"]),
    a("Coldplay", "Music of the Spheres World Tour", &["rock", "pop"]),
    a("BTS", "Permission to Dance on Stage", &["k-pop"]),
    a("방탄소년단", "월드투어 2027", &["k-pop", "케이팝"]),
    a("BLACKPINK", "Born Pink World Tour", &["k-pop"]),
    a("아이유", "HEREH 월드투어", &["k-pop", "ballad"]),
    a("Stray Kids", "Dominate World Tour", &["k-pop"]),
    a("米津玄師", "空想ツアー", &["j-pop"]),
    a("宇多田ヒカル", "SCIENCE FICTION TOUR", &["j-pop"]),
    a("YOASOBI", "超現実 ASIA TOUR", &["j-pop", "anime"]),
    a("ヨルシカ", "前世 ライブ", &["j-rock"]),
    a("ONE OK ROCK", "Premonition World Tour", &["j-rock", "rock"]),
    a("周杰倫", "嘉年華世界巡迴演唱會", &["mandopop"]),
    a("محسن یگانه", "کنسرت زنده", &["persian pop"]),
    a("گوگوش", "تور جهانی", &["persian pop", "classic"]),
    a("ابی", "شب های تهران", &["persian pop"]),
    a("شجریان", "آواز ایرانی", &["persian classical"]),
    a("عمرو دياب", "حفلة العمر", &["arabic pop"]),
    a("فيروز", "ليالي بيروت", &["arabic", "classic"]),
    a("Земфира", "Живой концерт", &["russian rock"]),
    a("Кино", "Группа крови", &["russian rock"]),
    a("Μελίνα Ασλανίδου", "Καλοκαίρι Live", &["greek pop"]),
    a("Beyoncé", "Renaissance World Tour", &["r&b", "pop"]),
    a("Ed Sheeran", "Mathematics Tour", &["pop", "acoustic"]),
    a("Billie Eilish", "Hit Me Hard and Soft Tour", &["pop", "alternative"]),
    a("Arijit Singh", "Live in Concert", &["bollywood", "playback"]),
    a("A. R. Rahman", "Wonderment Tour", &["bollywood", "film score"]),
    a("Shreya Ghoshal", "All Hearts Tour", &["bollywood"]),
    a("Metallica", "M72 World Tour", &["metal", "rock"]),
    a("Rammstein", "Stadium Tour", &["industrial metal"]),
    a("Kendrick Lamar", "Grand National Tour", &["hip-hop", "rap"]),
    a("Dua Lipa", "Radical Optimism Tour", &["pop", "dance"]),
    a("Bad Bunny", "Most Wanted Tour", &["reggaeton", "latin"]),
    a("Shakira", "Las Mujeres Ya No Lloran World Tour", &["latin", "pop"]),
    a("Rosalía", "Motomami World Tour", &["flamenco", "latin"]),
    a("Stromae", "Multitude Tour", &["electro", "chanson"]),
    a("Édith Piaf Tribute", "La Vie en Rose", &["chanson", "tribute"]),
    a("Måneskin", "Rush! World Tour", &["rock"]),
    a("Sigur Rós", "Átta Tour", &["post-rock"]),
    a("Björk", "Cornucopia", &["art pop", "electronic"]),
    a("Arctic Monkeys", "The Car Tour", &["indie rock"]),
    a("Imagine Dragons", "Loom World Tour", &["pop rock"]),
    a("The Weeknd", "After Hours til Dawn", &["r&b", "pop"]),
    a("Adele", "Weekends with Adele", &["soul", "pop"]),
    a("Harry Styles", "Love On Tour", &["pop"]),
    a("Olivia Rodrigo", "Guts World Tour", &["pop", "pop punk"]),
    a("SZA", "SOS Tour", &["r&b"]),
    a("Post Malone", "Big Ass Stadium Tour", &["hip-hop", "country"]),
    a("Travis Scott", "Circus Maximus Tour", &["hip-hop"]),
    a("Drake", "Anita Max Win Tour", &["hip-hop"]),
    a("Burna Boy", "I Told Them Tour", &["afrobeats"]),
    a("Wizkid", "More Love Less Ego Tour", &["afrobeats"]),
    a("Tems", "Born in the Wild Tour", &["afrobeats", "r&b"]),
    a("Angélique Kidjo", "Mother Nature Tour", &["world"]),
    a("Anitta", "Baile Funk Experience", &["funk", "latin"]),
    a("Karol G", "Mañana Será Bonito Tour", &["reggaeton", "latin"]),
    a("Peso Pluma", "Éxodo Tour", &["corridos", "latin"]),
    a(
        "Vicente Fernández Tribute",
        "Por Tu Maldito Amor",
        &["ranchera", "tribute"],
    ),
    a("Caetano Veloso", "Meu Coco", &["mpb"]),
    a("Mon Laferte", "Autopoiética Tour", &["latin", "rock"]),
    a("Sting", "3.0 Tour", &["rock", "pop"]),
    a("Elton John", "Farewell Yellow Brick Road", &["pop", "rock"]),
    a("Bruce Springsteen", "World Tour", &["rock"]),
    a("Foo Fighters", "Everything or Nothing at All Tour", &["rock"]),
    a("Pearl Jam", "Dark Matter World Tour", &["grunge", "rock"]),
    a("Red Hot Chili Peppers", "Unlimited Love Tour", &["funk rock"]),
    a("Green Day", "The Saviors Tour", &["punk rock"]),
    a("Linkin Park", "From Zero World Tour", &["nu metal", "rock"]),
    a("Iron Maiden", "Run for Your Lives World Tour", &["heavy metal"]),
    a("Ghost", "Skeletour", &["metal"]),
    a("Daft Punk Tribute", "Alive", &["electronic", "tribute"]),
    a("Fred again..", "USB Tour", &["electronic", "house"]),
    a("Calvin Harris", "Ibiza Residency", &["edm", "house"]),
    a("Martin Garrix", "Live", &["edm"]),
    a("Hans Zimmer", "Hans Zimmer Live", &["film score", "orchestral"]),
    a("Ludovico Einaudi", "Underwater Tour", &["classical", "piano"]),
    a(
        "Berliner Philharmoniker",
        "Saison Konzert",
        &["classical", "orchestral"],
    ),
    a("Yo-Yo Ma", "Bach Project", &["classical", "cello"]),
    a("Andrea Bocelli", "Duets Tour", &["opera", "classical"]),
    a("Cirque du Soleil", "Kooza", &["circus", "family"]),
    a("Hamilton", "The Musical", &["musical", "theatre"]),
    a("The Lion King", "The Musical", &["musical", "family"]),
    a("Trevor Noah", "Off the Record", &["comedy", "stand-up"]),
    a("Vir Das", "Mind Fool", &["comedy", "stand-up"]),
    a("Tyler Childers", "Mule Pull Tour", &["country", "americana"]),
    a("Taylor Mills Band", "Pub Nights", &["covers", "rock"]),
    a("Chris Stapleton", "All-American Road Show", &["country"]),
    a("Morgan Wallen", "I'm the Problem Tour", &["country"]),
    a("Coldwater Quartet", "Strings at Dusk", &["classical", "chamber"]),
    a("Swift Current", "River Sessions", &["folk"]),
];

/// A city, its country code and its venues.
pub struct City {
    pub name: &'static str,
    pub venues: &'static [&'static str],
}

const fn c(name: &'static str, venues: &'static [&'static str]) -> City {
    City { name, venues }
}

/// Every city of the fixture.
pub const CITIES: &[City] = &[
    c("Mumbai", &["DY Patil Stadium", "NSCI Dome", "Jio World Garden"]),
    c("Seoul", &["Olympic Stadium", "KSPO Dome", "Gocheok Sky Dome"]),
    c("Tokyo", &["Tokyo Dome", "Nippon Budokan", "Saitama Super Arena"]),
    c("Osaka", &["Kyocera Dome", "Osaka-jo Hall"]),
    c("Taipei", &["Taipei Dome", "Taipei Arena"]),
    c("Tehran", &["Milad Tower Hall", "Vahdat Hall"]),
    c("Dubai", &["Coca-Cola Arena", "Dubai Opera"]),
    c("Istanbul", &["Volkswagen Arena", "Harbiye Open-Air Theatre"]),
    c("Moscow", &["Luzhniki Stadium", "VTB Arena"]),
    c("Athens", &["OAKA Olympic Stadium", "Odeon of Herodes Atticus"]),
    c("London", &["Wembley Stadium", "The O2", "Royal Albert Hall"]),
    c("Paris", &["Stade de France", "Accor Arena", "Olympia"]),
    c("Berlin", &["Olympiastadion", "Uber Arena", "Philharmonie"]),
    c("München", &["Olympiastadion München", "Olympiahalle"]),
    c("Madrid", &["Santiago Bernabéu", "WiZink Center"]),
    c("Barcelona", &["Estadi Olímpic", "Palau Sant Jordi"]),
    c("Lisboa", &["Estádio da Luz", "MEO Arena"]),
    c("Milano", &["San Siro", "Mediolanum Forum"]),
    c("Amsterdam", &["Johan Cruijff ArenA", "Ziggo Dome"]),
    c("Stockholm", &["Friends Arena", "Avicii Arena"]),
    c("Reykjavík", &["Harpa", "Laugardalshöll"]),
    c("Warszawa", &["PGE Narodowy", "Torwar"]),
    c(
        "New York",
        &["Madison Square Garden", "MetLife Stadium", "Carnegie Hall"],
    ),
    c("Los Angeles", &["SoFi Stadium", "Hollywood Bowl", "Crypto.com Arena"]),
    c("Chicago", &["Soldier Field", "United Center"]),
    c("Nashville", &["Nissan Stadium", "Ryman Auditorium"]),
    c("Toronto", &["Rogers Centre", "Scotiabank Arena"]),
    c("México", &["Estadio GNP Seguros", "Palacio de los Deportes"]),
    c("São Paulo", &["Allianz Parque", "Estádio do Morumbi"]),
    c("Buenos Aires", &["Estadio River Plate", "Movistar Arena"]),
    c("Bogotá", &["Estadio El Campín", "Movistar Arena Bogotá"]),
    c("Lagos", &["Eko Convention Centre", "Teslim Balogun Stadium"]),
    c("Johannesburg", &["FNB Stadium", "Ticketpro Dome"]),
    c("Cairo", &["Cairo Stadium", "Cairo Opera House"]),
    c("Sydney", &["Accor Stadium", "Sydney Opera House"]),
    c("Melbourne", &["MCG", "Rod Laver Arena"]),
    c("Singapore", &["National Stadium", "Singapore Indoor Stadium"]),
    c("Bangkok", &["Rajamangala Stadium", "Impact Arena"]),
    c("Jakarta", &["Gelora Bung Karno Stadium", "Indonesia Arena"]),
    c("Delhi", &["Jawaharlal Nehru Stadium", "Indira Gandhi Arena"]),
];

/// Pinned events: (artist, city) pairs the relevance tests rely on, placed first.
const PINNED: &[(&str, &str)] = &[
    ("Coldplay", "Mumbai"),
    ("BTS", "Seoul"),
    ("방탄소년단", "Seoul"),
    ("Taylor Swift", "London"),
    ("محسن یگانه", "Tehran"),
    ("米津玄師", "Tokyo"),
];

/// SplitMix64: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The id of fixture event `i` (stable across runs).
pub fn event_id(i: usize) -> EventId {
    format!("5ea7c400-0000-4000-8000-{i:012x}")
        .parse()
        .expect("a well-formed uuid")
}

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2027, 1, 1, 19, 30, 0)
        .single()
        .expect("a valid date")
}

/// `n` events: the pinned ones first, then artists and cities drawn pseudo-randomly over two
/// years; about one in eight is sold out.
pub fn events(n: usize) -> Vec<EventDoc> {
    let mut rng = Rng(0x5eed_f00d);
    (0..n)
        .map(|i| {
            let (artist, city) = match PINNED.get(i) {
                Some((artist, city)) => (
                    ARTISTS
                        .iter()
                        .find(|a| a.name == *artist)
                        .expect("pinned artist exists"),
                    CITIES.iter().find(|c| c.name == *city).expect("pinned city exists"),
                ),
                None => (&ARTISTS[rng.below(ARTISTS.len())], &CITIES[rng.below(CITIES.len())]),
            };
            let venue = city.venues[rng.below(city.venues.len())];
            let starts_at =
                base() + Duration::days(rng.below(730) as i64) + Duration::minutes(30 * rng.below(4) as i64);
            let onsale_at = starts_at - Duration::days(60 + rng.below(120) as i64);
            let seats_total = 500 + rng.below(60_000) as u32;
            let sold_out = rng.below(8) == 0;
            let seats_left = if sold_out {
                0
            } else {
                1 + rng.below(seats_total as usize) as u32
            };
            let price_min = 2_000 + 500 * rng.below(20) as i64;
            EventDoc {
                event_id: event_id(i),
                title: format!("{} — {}", artist.tour, city.name),
                artist: artist.name.to_owned(),
                venue: venue.to_owned(),
                city: city.name.to_owned(),
                tags: artist.tags.iter().map(|t| (*t).to_owned()).collect(),
                starts_at,
                onsale_at,
                price_min,
                price_max: price_min * (2 + rng.below(6) as i64),
                currency: "EUR".to_owned(),
                seats_total,
                seats_left,
                sold_out,
            }
        })
        .collect()
}

//! A deterministic catalogue of realistic events for tests and benchmarks.
//!
//! Artists from many languages and scripts (Latin with and without accents, Korean, Japanese,
//! Chinese, Persian, Arabic, Cyrillic, Greek) tour cities around the world; [`events`] spreads
//! `n` events over them with a fixed pseudo-random sequence, so every run indexes the same
//! documents. The first events pin down the cases the relevance tests name (Coldplay in
//! Mumbai, BTS in Seoul, ...). [`scheduled`] and [`reserved`] build the journal facts the
//! projector tests feed it.

use chrono::{DateTime, Duration, TimeZone, Utc};
use frontrow_schema::{
    Currency, CustomerId, Event, EventId, EventScheduled, Money, ReservationId, SeatId, SeatMap, SeatsReserved,
};

use crate::index::{EventDoc, Listing};

/// An artist: name, other names, tour title and genres.
pub struct Artist {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub tour: &'static str,
    pub tags: &'static [&'static str],
}

const fn a(name: &'static str, tour: &'static str, tags: &'static [&'static str]) -> Artist {
    Artist {
        name,
        aliases: &[],
        tour,
        tags,
    }
}

/// An artist with aliases.
const fn aka(
    name: &'static str,
    aliases: &'static [&'static str],
    tour: &'static str,
    tags: &'static [&'static str],
) -> Artist {
    Artist {
        name,
        aliases,
        tour,
        tags,
    }
}

/// Every artist of the fixture.
pub const ARTISTS: &[Artist] = &[
    a("Taylor Swift", "The Eras Tour", &["pop", "country"]),
    a("Coldplay", "Music of the Spheres World Tour", &["rock", "pop"]),
    aka(
        "BTS",
        &["Bangtan Boys", "Bangtan Sonyeondan"],
        "Permission to Dance on Stage",
        &["k-pop"],
    ),
    a("방탄소년단", "월드투어 2027", &["k-pop", "케이팝"]),
    aka("BLACKPINK", &["블랙핑크"], "Born Pink World Tour", &["k-pop"]),
    aka("아이유", &["IU", "Lee Ji-eun"], "HEREH 월드투어", &["k-pop", "ballad"]),
    aka(
        "Stray Kids",
        &["SKZ", "스트레이 키즈"],
        "Dominate World Tour",
        &["k-pop"],
    ),
    aka("米津玄師", &["Kenshi Yonezu"], "空想ツアー", &["j-pop"]),
    aka("宇多田ヒカル", &["Hikaru Utada"], "SCIENCE FICTION TOUR", &["j-pop"]),
    aka("YOASOBI", &["ヨアソビ"], "超現実 ASIA TOUR", &["j-pop", "anime"]),
    aka("ヨルシカ", &["Yorushika"], "前世 ライブ", &["j-rock"]),
    a("ONE OK ROCK", "Premonition World Tour", &["j-rock", "rock"]),
    aka("周杰倫", &["Jay Chou", "周杰伦"], "嘉年華世界巡迴演唱會", &["mandopop"]),
    aka("محسن یگانه", &["Mohsen Yeganeh"], "کنسرت زنده", &["persian pop"]),
    aka("گوگوش", &["Googoosh"], "تور جهانی", &["persian pop", "classic"]),
    a("ابی", "شب های تهران", &["persian pop"]),
    a("شجریان", "آواز ایرانی", &["persian classical"]),
    aka("عمرو دياب", &["Amr Diab"], "حفلة العمر", &["arabic pop"]),
    aka("فيروز", &["Fairuz", "Fairouz"], "ليالي بيروت", &["arabic", "classic"]),
    aka("Земфира", &["Zemfira"], "Живой концерт", &["russian rock"]),
    aka("Кино", &["Kino"], "Группа крови", &["russian rock"]),
    aka(
        "Μελίνα Ασλανίδου",
        &["Melina Aslanidou"],
        "Καλοκαίρι Live",
        &["greek pop"],
    ),
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
    aka("The Weeknd", &["Abel Tesfaye"], "After Hours til Dawn", &["r&b", "pop"]),
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
    aka(
        "Red Hot Chili Peppers",
        &["RHCP"],
        "Unlimited Love Tour",
        &["funk rock"],
    ),
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
    // Connector words and punctuation between names.
    aka("Guns N' Roses", &["GNR"], "Because What You Want", &["hard rock"]),
    a("Simon & Garfunkel", "Old Friends", &["folk"]),
    aka("Earth, Wind & Fire", &["EWF"], "Shining Star", &["funk", "soul"]),
    a("Florence + the Machine", "Everybody Scream Tour", &["indie"]),
    a("Mumford & Sons", "Rushmere Tour", &["folk rock"]),
    a("Hall & Oates", "Private Eyes", &["soft rock"]),
    a("Salt-N-Pepa", "Push It Live", &["hip-hop"]),
    a("Jesse & Joy", "Clichè Tour", &["latin pop"]),
    a("Sandy & Junior", "Nossa História", &["mpb", "pop"]),
    a("Cindy & Bert", "Schlager Abend", &["schlager"]),
    a("Вера и Надежда", "Весенний концерт", &["russian pop"]),
    a("شهرام و حافظ ناظری", "شب موسیقی", &["persian classical"]),
    // Initials and dotted abbreviations.
    a("R.E.M.", "Monster Tour", &["alternative rock"]),
    a("M.I.A.", "Kala Live", &["hip-hop", "electronic"]),
    a("J. Cole", "The Off-Season Tour", &["hip-hop"]),
    a("B.B. King Tribute", "The Thrill Is Gone", &["blues", "tribute"]),
    a("AC/DC", "Power Up Tour", &["hard rock"]),
    a("S.H.E", "Together Forever", &["mandopop"]),
    a("L.E.J", "Pas Peur Tour", &["chanson", "pop"]),
    // Names written together or apart.
    a("OneRepublic", "Artificial Paradise Tour", &["pop rock"]),
    a("Def Leppard", "Hysteria Live", &["hard rock"]),
    a("Fleetwood Mac", "Rumours Live", &["rock"]),
    a("blink-182", "One More Time Tour", &["pop punk"]),
    a("Maroon 5", "Asia Tour", &["pop"]),
    a("Jay-Z", "Blueprint Live", &["hip-hop"]),
    a("Nightwish", "Yesterwynde Tour", &["symphonic metal"]),
    a("The Pineapple Thief", "Its Leaving Tour", &["progressive rock"]),
    a("BIGBANG", "Still Alive Tour", &["k-pop"]),
    a("Super Junior", "Super Show", &["k-pop"]),
    a("Mr.Children", "Dome Tour", &["j-pop"]),
    a("Soda Stereo", "Gracias Totales", &["rock en español"]),
    a("Tokio Hotel", "Beyond the World Tour", &["pop rock"]),
    a("Il Volo", "Tutti per Uno", &["pop lirico"]),
    a("Би-2", "Горизонт событий", &["russian rock"]),
    a("Πυξ Λαξ", "Συναυλία", &["greek rock"]),
    // Persian and Arabic names (typed with either letter form).
    a("کیهان کلهر", "کمانچه", &["persian classical"]),
    a("داریوش", "شب خاطره", &["persian pop"]),
    a("كاظم الساهر", "قيصر الأغنية", &["arabic pop"]),
    a("نانسي عجرم", "حفلة صيفية", &["arabic pop"]),
    a("إليسا", "أسعد واحدة", &["arabic pop"]),
    a("أم كلثوم تريبيوت", "ليلة الست", &["arabic classical", "tribute"]),
    // Two names a typo on the first letter tells apart.
    a("Marina", "Princess of Power Tour", &["pop"]),
    a("Karima", "Noches Andaluzas", &["flamenco"]),
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
                listing: Listing {
                    event_id: event_id(i),
                    title: format!("{} — {}", artist.tour, city.name),
                    artist: artist.name.to_owned(),
                    aliases: artist.aliases.iter().map(|a| (*a).to_owned()).collect(),
                    venue: venue.to_owned(),
                    city: city.name.to_owned(),
                    tags: artist.tags.iter().map(|t| (*t).to_owned()).collect(),
                    starts_at,
                    onsale_at,
                },
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

/// A class of queries fans type and the artist each should find.
pub struct QueryClass {
    pub name: &'static str,
    /// `(query, artist)`: the artist (as in [`ARTISTS`]) wanted in the top hits; for the
    /// suggestion class, wanted among the suggestions of a zero-hit answer.
    pub cases: &'static [(&'static str, &'static str)],
    /// More cases of the same class, written with the others but never used to tune the rules:
    /// the suite reports them apart, as a check on queries the rules were not fitted to.
    pub held_out: &'static [(&'static str, &'static str)],
}

/// The name of the class whose cases must find nothing and suggest the artist instead.
pub const SUGGESTION_CLASS: &str = "did you mean";

/// The query classes of the relevance suite, several languages each.
pub const QUERY_CLASSES: &[QueryClass] = &[
    QueryClass {
        name: "typos, prefixes, accents, scripts",
        cases: &[
            ("taylr swfit", "Taylor Swift"),
            ("taylor sw", "Taylor Swift"),
            ("coldpaly mumbai", "Coldplay"),
            ("bts seo", "BTS"),
            ("beyonse", "Beyoncé"),
            ("edd sheeran", "Ed Sheeran"),
            ("billie eilsh", "Billie Eilish"),
            ("arjit singh", "Arijit Singh"),
            ("metalika", "Metallica"),
            ("rammstien", "Rammstein"),
            ("kendrik lamar", "Kendrick Lamar"),
            ("blakcpink", "BLACKPINK"),
            ("arctik monkies", "Arctic Monkeys"),
            ("imagin dragons", "Imagine Dragons"),
            ("bad buny", "Bad Bunny"),
            ("hans zimer", "Hans Zimmer"),
            ("the weeknd", "The Weeknd"),
            ("rosalia", "Rosalía"),
            ("bjork", "Björk"),
            ("maneskin", "Måneskin"),
            ("земфира", "Земфира"),
            ("방탄소년단", "방탄소년단"),
            ("방탄", "방탄소년단"),
            ("아이유", "아이유"),
            ("米津玄師", "米津玄師"),
            ("米津", "米津玄師"),
            ("宇多田", "宇多田ヒカル"),
            ("ヨルシカ", "ヨルシカ"),
            ("周杰倫", "周杰倫"),
            ("محسن یگانه", "محسن یگانه"),
            ("یگانا", "محسن یگانه"),
            ("محسن", "محسن یگانه"),
            ("گوگوش", "گوگوش"),
            ("عمرو دياب", "عمرو دياب"),
        ],
        held_out: &[
            ("metalicka", "Metallica"),
            ("bruce springstin", "Bruce Springsteen"),
            ("ludovico einuadi", "Ludovico Einaudi"),
            ("andrea bocceli", "Andrea Bocelli"),
            ("stromai", "Stromae"),
            ("shreya goshal", "Shreya Ghoshal"),
            ("Земфиро", "Земфира"),
            ("방탄소년당", "방탄소년단"),
            ("米津玄帥", "米津玄師"),
            ("linkin prak", "Linkin Park"),
            ("iron maden", "Iron Maiden"),
            ("olivia rodrigez", "Olivia Rodrigo"),
            ("μελινα ασλανιδου", "Μελίνα Ασλανίδου"),
            ("caetano velozo", "Caetano Veloso"),
        ],
    },
    QueryClass {
        name: "first-letter typos",
        cases: &[
            ("karina", "Karima"),
            ("zoldplay", "Coldplay"),
            ("kammstein", "Rammstein"),
            ("vendrick lamar", "Kendrick Lamar"),
        ],
        held_out: &[
            ("narina", "Marina"),
            ("detallica", "Metallica"),
            ("fleetwood nac", "Fleetwood Mac"),
            ("bightwish", "Nightwish"),
        ],
    },
    QueryClass {
        name: "one hopeless word",
        cases: &[
            ("coldplay xqzvy", "Coldplay"),
            ("taylor swift wembly tickts", "Taylor Swift"),
            ("dua leepa", "Dua Lipa"),
            ("kidjo angelik", "Angélique Kidjo"),
            ("rammstein konzertkarten", "Rammstein"),
            ("방탄소년단 콘서트티켓", "방탄소년단"),
        ],
        held_out: &[
            ("metallica fan meetup", "Metallica"),
            ("bad bunny entradas baratas", "Bad Bunny"),
            ("karol g boletos", "Karol G"),
            ("米津玄師 チケット", "米津玄師"),
            ("گوگوش بلیط", "گوگوش"),
            ("stromae billets", "Stromae"),
        ],
    },
    QueryClass {
        name: "words run together or split",
        cases: &[
            ("one republic", "OneRepublic"),
            ("defleppard", "Def Leppard"),
            ("fleetwoodmac", "Fleetwood Mac"),
            ("blink182", "blink-182"),
            ("maroon5", "Maroon 5"),
            ("pine apple thief", "The Pineapple Thief"),
            ("big bang", "BIGBANG"),
            ("superjunior", "Super Junior"),
            ("mrchildren", "Mr.Children"),
            ("sodastereo", "Soda Stereo"),
            ("би2", "Би-2"),
            ("스트레이키즈", "Stray Kids"),
        ],
        held_out: &[
            ("tokiohotel", "Tokio Hotel"),
            ("ilvolo", "Il Volo"),
            ("night wish", "Nightwish"),
            ("jayz", "Jay-Z"),
            ("πυξλαξ", "Πυξ Λαξ"),
            ("블랙 핑크", "BLACKPINK"),
            ("linkinpark", "Linkin Park"),
            ("onerepublic", "OneRepublic"),
            ("ironmaiden", "Iron Maiden"),
        ],
    },
    QueryClass {
        name: "connectors and punctuation",
        cases: &[
            ("guns and roses", "Guns N' Roses"),
            ("guns n roses", "Guns N' Roses"),
            ("simon and garfunkel", "Simon & Garfunkel"),
            ("earth wind and fire", "Earth, Wind & Fire"),
            ("florence and the machine", "Florence + the Machine"),
            ("jesse y joy", "Jesse & Joy"),
            ("cindy und bert", "Cindy & Bert"),
            ("شهرام حافظ ناظری", "شهرام و حافظ ناظری"),
        ],
        held_out: &[
            ("mumford and sons", "Mumford & Sons"),
            ("hall and oates", "Hall & Oates"),
            ("salt n pepa", "Salt-N-Pepa"),
            ("salt and pepa", "Salt-N-Pepa"),
            ("sandy e junior", "Sandy & Junior"),
            ("вера надежда", "Вера и Надежда"),
            ("gunsnroses", "Guns N' Roses"),
        ],
    },
    QueryClass {
        name: "initials and abbreviations",
        cases: &[
            ("ar rahman", "A. R. Rahman"),
            ("a.r. rahman", "A. R. Rahman"),
            ("rem", "R.E.M."),
            ("r.e.m.", "R.E.M."),
            ("j cole", "J. Cole"),
            ("acdc", "AC/DC"),
            ("s.h.e", "S.H.E"),
        ],
        held_out: &[
            ("a r rahman", "A. R. Rahman"),
            ("arrahman", "A. R. Rahman"),
            ("m.i.a", "M.I.A."),
            ("mia", "M.I.A."),
            ("jcole", "J. Cole"),
            ("bb king", "B.B. King Tribute"),
            ("ac dc", "AC/DC"),
            ("lej", "L.E.J"),
        ],
    },
    QueryClass {
        name: "Persian and Arabic letter variants",
        cases: &[
            ("كيهان كلهر", "کیهان کلهر"),
            ("داريوش", "داریوش"),
            ("کاظم الساهر", "كاظم الساهر"),
            ("نانسی عجرم", "نانسي عجرم"),
            ("اليسا", "إليسا"),
        ],
        held_out: &[
            ("ام کلثوم", "أم كلثوم تريبيوت"),
            ("محسن يگانه", "محسن یگانه"),
            ("شجريان", "شجریان"),
            ("فیروز", "فيروز"),
            ("عمرو دیاب", "عمرو دياب"),
            ("كاظم", "كاظم الساهر"),
        ],
    },
    QueryClass {
        name: "full-width and compatibility forms",
        cases: &[
            ("ＢＴＳ", "BTS"),
            ("ｃｏｌｄｐｌａｙ", "Coldplay"),
            ("Ｔａｙｌｏｒ　Ｓｗｉｆｔ", "Taylor Swift"),
            ("ﾖﾙｼｶ", "ヨルシカ"),
        ],
        held_out: &[
            ("ＹＯＡＳＯＢＩ", "YOASOBI"),
            ("ＯＮＥ　ＯＫ　ＲＯＣＫ", "ONE OK ROCK"),
            ("ｍｅｔａｌｌｉｃａ", "Metallica"),
            ("ＡＣ／ＤＣ", "AC/DC"),
            ("ＳＺＡ", "SZA"),
        ],
    },
    QueryClass {
        name: "aliases",
        cases: &[
            ("bangtan boys", "BTS"),
            ("iu", "아이유"),
            ("kenshi yonezu", "米津玄師"),
            ("jay chou", "周杰倫"),
            ("zemfira", "Земфира"),
            ("amr diab", "عمرو دياب"),
            ("rhcp", "Red Hot Chili Peppers"),
            ("skz", "Stray Kids"),
        ],
        held_out: &[
            ("hikaru utada", "宇多田ヒカル"),
            ("utada", "宇多田ヒカル"),
            ("yorushika", "ヨルシカ"),
            ("googoosh", "گوگوش"),
            ("fairuz", "فيروز"),
            ("mohsen yeganeh", "محسن یگانه"),
            ("melina aslanidou", "Μελίνα Ασλανίδου"),
            ("abel tesfaye", "The Weeknd"),
            ("gnr", "Guns N' Roses"),
            ("bangtan sonyeondan", "BTS"),
            ("블랙핑크", "BLACKPINK"),
            ("周杰伦", "周杰倫"),
        ],
    },
    QueryClass {
        name: SUGGESTION_CLASS,
        cases: &[
            ("kolplay", "Coldplay"),
            ("beyonsay", "Beyoncé"),
            ("billy ailish", "Billie Eilish"),
            ("Зимфера", "Земфира"),
        ],
        held_out: &[
            ("shakeeraa", "Shakira"),
            ("metalikkka", "Metallica"),
            ("rosaleeya", "Rosalía"),
            ("travys skot", "Travis Scott"),
        ],
    },
];

/// An event of `seat_map`: the schema's sample event, but "Night" by "Band" on 1 June 2027 (on
/// sale from 1 March), up to 6 seats an order. A test changes what it needs with `..scheduled()`.
pub fn scheduled(event_id: EventId, seat_map: SeatMap) -> EventScheduled {
    let onsale = Utc.with_ymd_and_hms(2027, 3, 1, 10, 0, 0).unwrap();
    EventScheduled {
        title: "Night".into(),
        artist: "Band".into(),
        starts_at: Utc.with_ymd_and_hms(2027, 6, 1, 20, 0, 0).unwrap(),
        max_seats_per_order: 6,
        ..frontrow_schema::testsuite::sample_event(event_id, onsale, seat_map)
    }
}

/// Customer "fan" holding `seats` for nothing until `hold_until`.
pub fn reserved(reservation_id: ReservationId, seats: Vec<SeatId>, hold_until: DateTime<Utc>) -> Event {
    Event::SeatsReserved(SeatsReserved {
        reservation_id,
        customer: CustomerId::parse("fan").expect("a valid customer id"),
        seats,
        hold_until,
        amount: Money {
            amount: 0,
            currency: Currency::parse("EUR").expect("a valid currency"),
        },
        admission_ticket: None,
    })
}

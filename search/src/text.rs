//! How text becomes words, the same for documents and queries, on both backends.
//!
//! All analysis happens here, in Rust: the backends only ever see words already split,
//! normalised and joined by single spaces, which they index with a plain whitespace tokenizer
//! (see [`crate::relevance`] for what is indexed and how a query is planned). So tantivy and
//! OpenSearch cannot disagree about what a word is.
//!
//! A word is a run of letters, digits and combining marks (Hangul syllables, kana, kanji,
//! Devanagari and Persian words each stay one word; spaces, punctuation and the zero-width
//! non-joiner split). Before splitting, each character is normalised:
//!
//! - compatibility forms are unfolded (Unicode NFKC): full-width `ＢＴＳ` is `BTS`,
//!   half-width `ﾖﾙｼｶ` is `ヨルシカ`, ligatures and circled digits become plain letters;
//! - Arabic-script variants are unified: Arabic yeh and alef maksura (`ي`, `ى`) are Persian yeh
//!   (`ی`), Arabic kaf (`ك`) is Persian kaf (`ک`), teh marbuta (`ة`) is heh (`ه`), alef with
//!   hamza or madda (`أ`, `إ`, `آ`) is alef (`ا`), and the tatweel and short-vowel marks
//!   (harakat) are dropped; Arabic-Indic and Persian digits are ASCII digits;
//!
//! then words are lowercased and Latin letters lose their accents (`Beyoncé` = `beyonce`,
//! `Måneskin` = `maneskin`).

use std::ops::Range;

use tantivy::tokenizer::{AsciiFoldingFilter, LowerCaser, RawTokenizer, TextAnalyzer};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// The name tantivy knows [`whitespace`] by.
pub const WORDS: &str = "frontrow_words";
/// The most words of a query that are searched for; the rest is ignored.
pub const MAX_QUERY_WORDS: usize = 10;
/// Longer words are not indexed (nobody types them; they would only bloat the dictionary).
pub const MAX_WORD_CHARS: usize = 64;

/// The analyzer of every searchable tantivy field: the text is already words joined by spaces.
pub fn whitespace() -> TextAnalyzer {
    TextAnalyzer::builder(tantivy::tokenizer::WhitespaceTokenizer::default()).build()
}

/// How many typos a query word may have, by its length in characters.
///
/// The default is Algolia's (`minWordSizefor1Typo` 4, `minWordSizefor2Typos` 8);
/// [`Typos::MEILISEARCH`] is Meilisearch's (`oneTypo` 5, `twoTypos` 9). A typo is an
/// insertion, deletion, substitution or a swap of two neighbours; a typo on the first letter
/// counts as two (see [`typos`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Typos {
    /// Words of at least this many characters may have one typo.
    pub one_from: usize,
    /// Words of at least this many characters may have two typos.
    pub two_from: usize,
}

impl Typos {
    pub const ALGOLIA: Typos = Typos {
        one_from: 4,
        two_from: 8,
    };
    pub const MEILISEARCH: Typos = Typos {
        one_from: 5,
        two_from: 9,
    };

    /// How many typos `word` may have.
    pub fn allowed(&self, word: &str) -> u8 {
        let n = word.chars().count();
        if n >= self.two_from {
            2
        } else if n >= self.one_from {
            1
        } else {
            0
        }
    }
}

impl Default for Typos {
    fn default() -> Self {
        Typos::ALGOLIA
    }
}

/// Appends the normalised form of `c` to `out` (nothing for a character that is dropped).
fn normalise_char(c: char, out: &mut String) {
    match c {
        'ي' | 'ى' | 'ې' => out.push('ی'),
        'ك' => out.push('ک'),
        'ة' => out.push('ه'),
        'أ' | 'إ' | 'آ' | 'ٱ' => out.push('ا'),
        // Tatweel and harakat: decoration, not letters.
        'ـ' | '\u{064B}'..='\u{065F}' | '\u{0670}' => {}
        '٠'..='٩' => out.push(char::from(b'0' + (c as u32 - '٠' as u32) as u8)),
        '۰'..='۹' => out.push(char::from(b'0' + (c as u32 - '۰' as u32) as u8)),
        c if c.is_ascii() => out.push(c),
        c => out.extend(std::iter::once(c).nfkc()),
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || is_combining_mark(c)
}

/// Lowercases and folds accents of one word.
struct Folder(TextAnalyzer);

impl Folder {
    fn new() -> Self {
        Folder(
            TextAnalyzer::builder(RawTokenizer::default())
                .filter(LowerCaser)
                .filter(AsciiFoldingFilter)
                .build(),
        )
    }

    fn fold(&mut self, word: &str) -> String {
        if word.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return word.to_ascii_lowercase();
        }
        let mut stream = self.0.token_stream(word);
        let mut out = String::new();
        while stream.advance() {
            out.push_str(&stream.token().text);
        }
        out
    }
}

/// The words of `text` with where each sits in it (byte ranges of the original text).
pub fn words_with_offsets(text: &str) -> Vec<(String, Range<usize>)> {
    let mut folder = Folder::new();
    let mut out = Vec::new();
    let mut word = String::new();
    let mut start = 0;
    let mut normalised = String::new();
    let mut finish = |word: &mut String, range: Range<usize>, out: &mut Vec<(String, Range<usize>)>| {
        if !word.is_empty() {
            let folded = folder.fold(word);
            if !folded.is_empty() && folded.chars().count() <= MAX_WORD_CHARS {
                out.push((folded, range));
            }
            word.clear();
        }
    };
    for (at, c) in text.char_indices() {
        normalised.clear();
        normalise_char(c, &mut normalised);
        for n in normalised.chars() {
            if is_word_char(n) {
                if word.is_empty() {
                    start = at;
                }
                word.push(n);
            } else {
                finish(&mut word, start..at, &mut out);
            }
        }
    }
    finish(&mut word, start..text.len(), &mut out);
    out
}

/// The words of `text`.
pub fn words(text: &str) -> Vec<String> {
    words_with_offsets(text).into_iter().map(|(w, _)| w).collect()
}

/// The words of a query, at most [`MAX_QUERY_WORDS`], without repeats.
pub fn query_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in words(text) {
        if !out.contains(&word) {
            out.push(word);
        }
        if out.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    out
}

/// Words that join names and are written many ways (`and`, `&`, `n'`, `'n'`, `+`): a query
/// need not match them. `&` and `+` are punctuation and never words; these are the spelled-out
/// ones, in the fixture's languages (English, French, Spanish, Portuguese, Italian, German,
/// Dutch, Scandinavian, Catalan/Polish, Russian, Greek, Persian/Arabic).
pub const CONNECTORS: &[&str] = &[
    "and", "n", "nd", "et", "y", "e", "ed", "und", "en", "og", "och", "i", "и", "και", "و",
];

pub fn is_connector(word: &str) -> bool {
    CONNECTORS.contains(&word)
}

/// The optimal string alignment distance: Levenshtein plus swaps of neighbours as one edit.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev2 = vec![0usize; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0usize; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(prev2[j - 2] + 1);
            }
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// How many typos the indexed `word` is from the query word `query`, a typo on the first
/// letter counting as two; `None` when that is more than `typos` allows for `query`.
pub fn typos(typos: &Typos, query: &str, word: &str) -> Option<u8> {
    let distance = edit_distance(query, word);
    if distance == 0 {
        return Some(0);
    }
    let cost = distance + usize::from(query.chars().next() != word.chars().next());
    (cost <= usize::from(typos.allowed(query))).then_some(cost as u8)
}

/// Whether an indexed `word` matches the query word `query` (the last word of the query also
/// matches as a prefix).
pub fn word_matches(rules: &Typos, query: &str, word: &str, last: bool) -> bool {
    (last && word.starts_with(query)) || typos(rules, query, word).is_some()
}

/// The query in the form results are cached under: its words, normalised, in order.
pub fn normalize(text: &str) -> String {
    words(text).join(" ")
}

/// `text` with every word that matches one of the query's `words` wrapped in `<em>`, HTML
/// escaped; `None` when no word matches.
pub fn highlight(text: &str, words: &[String]) -> Option<String> {
    let rules = Typos::default();
    let mut out = String::with_capacity(text.len() + 16);
    let mut at = 0;
    let mut any = false;
    for (word, range) in words_with_offsets(text) {
        let hit = words
            .iter()
            .enumerate()
            .any(|(i, q)| word_matches(&rules, q, &word, i + 1 == words.len()));
        if hit {
            escape_into(&mut out, &text[at..range.start]);
            out.push_str("<em>");
            escape_into(&mut out, &text[range.clone()]);
            out.push_str("</em>");
            at = range.end;
            any = true;
        }
    }
    escape_into(&mut out, &text[at..]);
    any.then_some(out)
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_scripts_sensibly() {
        assert_eq!(words("Beyoncé — Renaissance!"), ["beyonce", "renaissance"]);
        assert_eq!(words("방탄소년단 월드투어"), ["방탄소년단", "월드투어"]);
        assert_eq!(words("米津玄師 2026"), ["米津玄師", "2026"]);
        assert_eq!(words("ヨアソビ・ライブ"), ["ヨアソビ", "ライブ"]);
        assert_eq!(words("محسن یگانه"), ["محسن", "یگانه"]);
        assert_eq!(words("AC/DC"), ["ac", "dc"]);
        assert_eq!(words("अरिजीत सिंह"), ["अरिजीत", "सिंह"], "vowel signs stay in the word");
    }

    #[test]
    fn letter_variants_and_compatibility_forms_are_one() {
        assert_eq!(words("ＢＴＳ　Ｓｅｏｕｌ"), ["bts", "seoul"]);
        assert_eq!(words("ﾖﾙｼｶ"), words("ヨルシカ"));
        assert_eq!(words("محسن يگانه"), words("محسن یگانه"), "Arabic yeh is Persian yeh");
        assert_eq!(words("كيهان كلهر"), words("کیهان کلهر"), "Arabic kaf is Persian kaf");
        assert_eq!(words("إليسا"), words("اليسا"));
        assert_eq!(words("مُحَمَّد"), words("محمد"), "harakat are dropped");
        assert_eq!(words("۲۰۲۷"), ["2027"]);
        // The offsets are those of the original text, for highlighting.
        let text = "Ｔａｙｌｏｒ Swift";
        let found = words_with_offsets(text);
        assert_eq!(&text[found[0].1.clone()], "Ｔａｙｌｏｒ");
        assert_eq!(&text[found[1].1.clone()], "Swift");
    }

    #[test]
    fn typos_depend_on_length_and_a_first_letter_typo_costs_two() {
        let t = Typos::default();
        assert_eq!((t.allowed("bts"), t.allowed("buny"), t.allowed("coldpaly")), (0, 1, 2));
        let m = Typos::MEILISEARCH;
        assert_eq!(
            (m.allowed("buny"), m.allowed("swfit"), m.allowed("coldpaly")),
            (0, 1, 1)
        );
        assert_eq!(edit_distance("swfit", "swift"), 1, "a swap is one edit");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(typos(&t, "swfit", "swift"), Some(1));
        assert_eq!(typos(&t, "metalika", "metallica"), Some(2));
        assert_eq!(
            typos(&t, "wift", "swift"),
            None,
            "first letter: two typos, four letters allow one"
        );
        assert_eq!(typos(&t, "kolplays", "coldplay"), None);
        assert_eq!(typos(&t, "zoldplay", "coldplay"), Some(2), "eight letters allow two");
        assert!(word_matches(&t, "seo", "seoul", true));
        assert!(!word_matches(&t, "seo", "seoul", false));
    }

    #[test]
    fn highlights_escape_and_mark_whole_words() {
        let q = query_words("taylr swi");
        assert_eq!(
            highlight("Taylor Swift & <Friends>", &q).unwrap(),
            "<em>Taylor</em> <em>Swift</em> &amp; &lt;Friends&gt;"
        );
        assert_eq!(highlight("Coldplay", &q), None);
        assert_eq!(normalize("  Taylor   SWIFT! "), "taylor swift");
    }
}

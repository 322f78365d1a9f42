//! The matching rules both backends share.
//!
//! Words are runs of letters, digits and combining marks (so Hangul syllables, kana, kanji and
//! Persian words each stay one word; spaces, punctuation and the zero-width non-joiner split),
//! lowercased and folded to ASCII where a Latin letter has an accent (`Beyoncé` = `beyonce`).
//! A query word may differ from an indexed word by [`max_edits`] edits (insertions,
//! deletions, substitutions, and a swap of two neighbours counting as one); the last word of
//! a query also matches as a prefix, for results while the fan types. OpenSearch gets the same
//! rules from the mapping (`schema/search/events-v1.json`: a pattern tokenizer, `lowercase`,
//! `asciifolding`, edge n-grams) and `fuzziness: AUTO`.

use std::ops::Range;

use tantivy::tokenizer::{AsciiFoldingFilter, LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer};

/// The name tantivy knows [`analyzer`] by.
pub const WORDS: &str = "frontrow_words";
/// The most words of a query that are searched for; the rest is ignored.
pub const MAX_QUERY_WORDS: usize = 10;

/// The analyzer of every searchable text field.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// The words of `text` with where each sits in it (byte ranges).
pub fn words_with_offsets(text: &str) -> Vec<(String, Range<usize>)> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        let token = stream.token();
        out.push((token.text.clone(), token.offset_from..token.offset_to));
    }
    out
}

/// The words of a query, at most [`MAX_QUERY_WORDS`], without repeats.
pub fn query_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for (word, _) in words_with_offsets(text) {
        if !words.contains(&word) {
            words.push(word);
        }
        if words.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    words
}

/// How many of `n` query words a hit must match: all of up to three, then all but a quarter,
/// so that one badly mangled word in a long query does not lose everything.
pub fn required_words(n: usize) -> usize {
    (n - n / 4).max(1)
}

/// How many edits a query word may be away from an indexed word: none for one or two
/// characters, one for three to five, two for longer words (Elasticsearch's `AUTO`).
pub fn max_edits(word: &str) -> u8 {
    match word.chars().count() {
        0..=2 => 0,
        3..=5 => 1,
        _ => 2,
    }
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

/// Whether an indexed `word` matches the query word `query` (the last word of the query also
/// matches as a prefix).
pub fn word_matches(query: &str, word: &str, last: bool) -> bool {
    (last && word.starts_with(query)) || edit_distance(query, word) <= usize::from(max_edits(query))
}

/// The query in the form results are cached under: its words, lowercased and folded, in order.
pub fn normalize(text: &str) -> String {
    words_with_offsets(text)
        .into_iter()
        .map(|(w, _)| w)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` with every word that matches one of the query's `words` wrapped in `<em>`, HTML
/// escaped; `None` when no word matches.
pub fn highlight(text: &str, words: &[String]) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 16);
    let mut at = 0;
    let mut any = false;
    for (word, range) in words_with_offsets(text) {
        let hit = words
            .iter()
            .enumerate()
            .any(|(i, q)| word_matches(q, &word, i + 1 == words.len()));
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
        let words = |t: &str| words_with_offsets(t).into_iter().map(|(w, _)| w).collect::<Vec<_>>();
        assert_eq!(words("Beyoncé — Renaissance!"), ["beyonce", "renaissance"]);
        assert_eq!(words("방탄소년단 월드투어"), ["방탄소년단", "월드투어"]);
        assert_eq!(words("米津玄師 2026"), ["米津玄師", "2026"]);
        assert_eq!(words("ヨアソビ・ライブ"), ["ヨアソビ", "ライブ"]);
        assert_eq!(words("محسن یگانه"), ["محسن", "یگانه"]);
        assert_eq!(words("AC/DC"), ["ac", "dc"]);
    }

    #[test]
    fn edits_depend_on_word_length_and_swaps_count_once() {
        assert_eq!(max_edits("ab"), 0);
        assert_eq!(max_edits("bts"), 1);
        assert_eq!(max_edits("swfit"), 1);
        assert_eq!(max_edits("coldpaly"), 2);
        assert_eq!(edit_distance("swfit", "swift"), 1);
        assert_eq!(edit_distance("taylr", "taylor"), 1);
        assert_eq!(edit_distance("coldpaly", "coldplay"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert!(word_matches("seo", "seoul", true));
        assert!(!word_matches("seo", "seoul", false));
        assert!(!word_matches("ab", "ac", false));
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

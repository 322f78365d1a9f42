//! Which journal partition owns an event.
//!
//! Kafka's default partitioner for keyed records: `toPositive(murmur2(key)) % partitions`, with
//! the key being the event id's lowercase hyphenated text. Using Kafka's exact function means a
//! Java, Go or Python producer keyed the same way agrees with us about where an event lives.

use crate::ids::EventId;

/// Kafka's `Utils.murmur2` (MurmurHash2, seed `0x9747b28c`), as a signed 32-bit value like Java's.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;

    let len = data.len();
    let mut h: u32 = SEED ^ (len as u32);
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition of a keyed record among `partitions`, exactly as Kafka's Java producer picks it.
pub fn partition_for_key(key: &[u8], partitions: u32) -> u32 {
    assert!(partitions > 0, "a topic has at least one partition");
    ((murmur2(key) & 0x7fff_ffff) as u32) % partitions
}

/// The partition that owns an event.
pub fn partition_of(event: &EventId, partitions: u32) -> u32 {
    partition_for_key(event.to_string().as_bytes(), partitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors from Apache Kafka's `UtilsTest.testMurmur2` and librdkafka's `rdmurmur2.c`.
    #[test]
    fn agrees_with_kafka() {
        let cases: &[(&str, i32)] = &[
            ("21", -973_932_308),
            ("foobar", -790_332_482),
            ("a-little-bit-long-string", -985_981_536),
            ("a-little-bit-longer-string", -1_486_304_829),
            ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58_897_971),
            ("abc", 479_470_107),
            ("1", -1_993_445_489),
            ("12", 126_087_238),
            ("123", -267_702_483),
            ("1234", -1_614_185_708),
            ("12345", -1_188_365_604),
            ("kafka", 0xd067_cf64_u32 as i32),
        ];
        for (key, want) in cases {
            assert_eq!(murmur2(key.as_bytes()), *want, "murmur2({key:?})");
        }
    }

    #[test]
    fn partitions_are_in_range_and_stable() {
        for n in 1..40u32 {
            let id = EventId::new();
            let p = partition_of(&id, n);
            assert!(p < n);
            assert_eq!(p, partition_of(&id, n));
        }
    }
}

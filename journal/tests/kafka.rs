//! The journal conformance suite, fencing and recovery on a real Kafka broker
//! (started by `deploy/local/up.sh kafka`; address from `FRONTROW_KAFKA_BROKERS`).

use std::sync::Arc;

use async_trait::async_trait;
use frontrow_journal::conformance::{Harness, read_all};
use frontrow_journal::{Journal, JournalError, KafkaJournal, KafkaSettings, Record, journal_conformance};

fn brokers() -> String {
    std::env::var("FRONTROW_KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into())
}

/// Each harness gets topics of its own, so tests run in parallel and reruns start clean.
struct Kafka {
    run: String,
}

#[async_trait]
impl Harness for Kafka {
    async fn open(&self, name: &str, partitions: u32) -> Arc<dyn Journal> {
        Arc::new(connect(&format!("frontrow.test.{}.{name}", self.run), partitions).await)
    }
}

async fn connect(topic: &str, partitions: u32) -> KafkaJournal {
    let settings = KafkaSettings {
        topic: topic.into(),
        ..KafkaSettings::new(brokers(), partitions)
    };
    KafkaJournal::connect(settings)
        .await
        .expect("Kafka is reachable: run deploy/local/up.sh kafka")
}

/// A topic of its own for one test, `frontrow.test.<test>.<random>`, so reruns start clean.
fn own_topic(test: &str) -> String {
    format!("frontrow.test.{test}.{}", uuid::Uuid::new_v4().simple())
}

/// A journal on `topic` that has claimed `partition`, so it is that partition's writer.
async fn claimed(topic: &str, partitions: u32, partition: u32) -> KafkaJournal {
    let journal = connect(topic, partitions).await;
    journal.claim(partition).await.unwrap();
    journal
}

fn harness() -> Kafka {
    Kafka {
        run: uuid::Uuid::new_v4().simple().to_string(),
    }
}

journal_conformance!(harness(), #[ignore = "needs kafka: run the README's test command"]);

fn rec(value: &str) -> Record {
    Record {
        key: b"event".to_vec(),
        value: value.as_bytes().to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn a_second_writer_fences_the_first() {
    let topic = own_topic("fence");
    let first = claimed(&topic, 2, 1).await;
    first.append(1, vec![rec("by-first")]).await.unwrap();

    let second = claimed(&topic, 2, 1).await;
    // The first writer's producer is fenced: its append fails and is not visible.
    let fenced = first.append(1, vec![rec("lost")]).await;
    assert!(matches!(fenced, Err(JournalError::Fenced(1))), "{fenced:?}");
    second.append(1, vec![rec("by-second")]).await.unwrap();
    // Other partitions are not affected.
    first.append(0, vec![rec("p0")]).await.unwrap();

    let values: Vec<String> = read_all(&second, 1)
        .await
        .into_iter()
        .map(|r| String::from_utf8(r.value).unwrap())
        .collect();
    assert_eq!(values, vec!["by-first", "by-second"]);
}

/// A failover's claim: the dead writer died inside a transaction, so the coordinator refuses the
/// first InitProducerId (CONCURRENT_TRANSACTIONS) while it aborts that transaction. The claim asks
/// again until it has the partition; the dead writer's record is never read, the new writer's
/// is. (How long the claim took is printed, not checked.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn a_claim_aborts_the_open_transaction_of_a_writer_that_died() {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let topic = own_topic("dead");
    let journal = claimed(&topic, 2, 1).await;
    journal.append(1, vec![rec("before")]).await.unwrap();
    drop(journal);

    // A writer that dies mid-transaction: its record sent, neither committed nor aborted.
    let dead: BaseProducer = frontrow_journal::client_config(&brokers())
        .set("transactional.id", frontrow_journal::writer_transactional_id(&topic, 1))
        .create()
        .unwrap();
    let timeout = std::time::Duration::from_secs(10);
    dead.init_transactions(timeout).unwrap();
    dead.begin_transaction().unwrap();
    dead.send(
        BaseRecord::to(&topic)
            .partition(1)
            .key("event")
            .payload("from-the-dead"),
    )
    .map_err(|(e, _)| e)
    .unwrap();
    dead.flush(timeout).unwrap();
    // Killed: nothing more comes from it, and it does not abort on its way out.
    std::mem::forget(dead);

    let next = connect(&topic, 2).await;
    let started = std::time::Instant::now();
    next.claim(1).await.unwrap();
    eprintln!("the claim over an open transaction took {:?}", started.elapsed());
    next.append(1, vec![rec("after")]).await.unwrap();
    let values: Vec<String> = read_all(&next, 1)
        .await
        .into_iter()
        .map(|r| String::from_utf8(r.value).unwrap())
        .collect();
    assert_eq!(values, vec!["before", "after"]);
}

/// The record a claim commits to close a transaction left open on the partition (key
/// `frontrow.closing-commit`, no value; see the README) is passed over by every read: readers
/// get the records around it and the offsets move past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn a_closing_record_is_passed_over_by_reads() {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let topic = own_topic("closing");
    let journal = claimed(&topic, 1, 0).await;
    journal.append(0, vec![rec("one")]).await.unwrap();
    let plain: BaseProducer = frontrow_journal::client_config(&brokers()).create().unwrap();
    plain
        .send(
            BaseRecord::<str, [u8]>::to(&topic)
                .partition(0)
                .key("frontrow.closing-commit"),
        )
        .map_err(|(e, _)| e)
        .unwrap();
    plain.flush(std::time::Duration::from_secs(10)).unwrap();
    journal.append(0, vec![rec("two")]).await.unwrap();
    let read = read_all(&journal, 0).await;
    let values: Vec<String> = read
        .iter()
        .map(|r| String::from_utf8(r.value.clone()).unwrap())
        .collect();
    assert_eq!(values, vec!["one", "two"]);
    // A read from just past "one" passes over the closing record to "two".
    let batch = journal.read(0, read[0].offset + 1, 10).await.unwrap();
    assert_eq!(batch.records.len(), 1);
    assert_eq!(batch.records[0].value, b"two");
    assert!(
        read[1].offset > read[0].offset + 2,
        "the closing record lies between them"
    );
    assert!(batch.next > read[1].offset);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn an_existing_topic_must_have_the_configured_partitions() {
    let topic = own_topic("count");
    drop(connect(&topic, 3).await);
    let settings = KafkaSettings {
        topic,
        ..KafkaSettings::new(brokers(), 4)
    };
    assert!(matches!(
        KafkaJournal::connect(settings).await,
        Err(JournalError::PartitionCountMismatch {
            found: 3,
            configured: 4,
            ..
        })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn cloudevents_travel_with_their_attributes_as_headers() {
    use rdkafka::Message;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::Headers;

    let topic = own_topic("headers");
    let journal = connect(&topic, 1).await;
    let event = br#"{"specversion":"1.0","id":"e-1","source":"/frontrow/events/x","type":"frontrow.seats.reserved","subject":"x","time":"2026-03-01T10:00:00Z","data":{}}"#;
    journal
        .append(
            0,
            vec![
                Record {
                    key: b"x".to_vec(),
                    value: event.to_vec(),
                },
                rec("not a cloudevent"),
            ],
        )
        .await
        .unwrap();

    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", brokers())
        .set("group.id", "frontrow-test-headers")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition_offset(&topic, 0, rdkafka::Offset::Beginning).unwrap();
    consumer.assign(&tpl).unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let m = consumer
            .poll(std::time::Duration::from_secs(10))
            .expect("a record")
            .unwrap();
        let headers: Vec<(String, String)> = m
            .headers()
            .map(|h| {
                h.iter()
                    .map(|h| (h.key.to_owned(), String::from_utf8_lossy(h.value.unwrap()).into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        seen.push(headers);
    }
    let get = |key: &str| seen[0].iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    assert_eq!(get("content-type"), Some("application/cloudevents+json; charset=UTF-8"));
    assert_eq!(get("ce_id"), Some("e-1"));
    assert_eq!(get("ce_type"), Some("frontrow.seats.reserved"));
    assert_eq!(get("ce_specversion"), Some("1.0"));
    assert_eq!(get("ce_subject"), Some("x"));
    assert!(seen[1].is_empty(), "a value that is not a CloudEvent gets no headers");
}

/// The tail a writer reads after its snapshot starts with its last commit's marker, which a
/// `read_committed` consumer passes over without returning anything: a read of markers only
/// comes back empty at the end, and it does not wait out the first-record timeout for a
/// record that cannot come (the time is printed, not checked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn a_read_of_markers_only_ends_at_the_end() {
    let topic = own_topic("markers");
    let writer = claimed(&topic, 1, 0).await;
    let offsets = writer.append(0, vec![rec("one")]).await.unwrap();
    assert_eq!(offsets, [0]);
    // The commit marker follows the record, written just after the commit returns.
    let end = || async { writer.end_offset(0).await.unwrap() };
    let marked = |&e: &u64| (e > 1).then_some(e);
    let end = frontrow_schema::testsuite::wait_until(
        std::time::Duration::from_secs(5),
        "a commit marker follows the record",
        end,
        marked,
    )
    .await;

    let reader = connect(&topic, 1).await;
    let started = std::time::Instant::now();
    let batch = reader.read(0, 1, 100).await.unwrap();
    eprintln!("a read of markers only took {:?}", started.elapsed());
    assert!(batch.records.is_empty());
    assert_eq!(batch.next, end);
}

/// The topics of the named log that the broker's metadata still lists.
fn listed(names: &[String]) -> Vec<String> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", brokers())
        .create()
        .unwrap();
    let metadata = consumer
        .fetch_metadata(None, std::time::Duration::from_secs(10))
        .unwrap();
    let topics: Vec<String> = metadata.topics().iter().map(|t| t.name().to_owned()).collect();
    names.iter().filter(|n| topics.contains(n)).cloned().collect()
}

/// Creates a topic of one partition that belongs to no log.
async fn create_plain(name: &str) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    let admin: AdminClient<rdkafka::client::DefaultClientContext> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", brokers())
        .create()
        .unwrap();
    let topic = NewTopic::new(name, 1, TopicReplication::Fixed(1));
    for result in admin.create_topics([&topic], &AdminOptions::new()).await.unwrap() {
        result.unwrap();
    }
}

/// `delete_log` removes a log's topic, its snapshot topics and the extra ones named, and a
/// second call (a log already gone) is no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn delete_log_removes_the_topic_its_snapshots_and_the_extra_ones() {
    let topic = own_topic("delete");
    let extra = format!("{topic}.extra");
    drop(connect(&topic, 2).await);
    create_plain(&extra).await;
    let names = [
        topic.clone(),
        format!("{topic}.snapshots"),
        format!("{topic}.snapshot-history"),
        extra.clone(),
    ];
    assert_eq!(listed(&names), names, "connect creates the log's topics");

    frontrow_journal::delete_log(&brokers(), &topic, std::slice::from_ref(&extra))
        .await
        .unwrap();
    // The brokers drop a deleted topic from their metadata shortly after the call returns.
    let left = || async { listed(&names) };
    let gone = |left: &Vec<String>| left.is_empty().then_some(());
    frontrow_schema::testsuite::wait_until(
        std::time::Duration::from_secs(30),
        "the deleted topics are not listed",
        left,
        gone,
    )
    .await;
    frontrow_journal::delete_log(&brokers(), &topic, &[extra])
        .await
        .unwrap();
}

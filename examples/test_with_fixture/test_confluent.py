"""confluent-kafka against the session broker: each test gets its own topic and group names."""

from confluent_kafka import Consumer, Producer


def test_produce_lands_in_the_topic(kafka_broker, kafka_topic):
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    with kafka_broker.assert_produces(kafka_topic, count=2) as got:
        producer.produce(kafka_topic, key=b"k1", value=b"hello")
        producer.produce(kafka_topic, key=b"k2", value=b"world", headers=[("trace", b"abc")])
        assert producer.flush(10) == 0
    assert [(r.key, r.value) for r in got] == [(b"k1", b"hello"), (b"k2", b"world")]
    assert got[1].headers == (("trace", b"abc"),)
    assert kafka_broker.end_offsets(kafka_topic) == {0: 2}


def test_consumer_group_commits(kafka_broker):
    topic = kafka_broker.new_topic("orders", partitions=2)
    group = kafka_broker.group("billing")
    for i in range(6):
        kafka_broker.add_record(topic, f"order-{i}", partition=i % 2)

    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen = []
    try:
        for _ in range(200):
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                seen.append(msg.value())
                consumer.commit(msg, asynchronous=False)
            if len(seen) == 6:
                break
    finally:
        consumer.close()
    assert sorted(seen) == [f"order-{i}".encode() for i in range(6)]
    assert kafka_broker.committed(group, topic, 0) == 3
    assert kafka_broker.committed(group, topic, 1) == 3


def test_topics_do_not_collide(kafka_broker):
    # Same short name as in the test above, but a different test: a different topic.
    topic = kafka_broker.new_topic("orders")
    assert kafka_broker.end_offsets(topic) == {0: 0}

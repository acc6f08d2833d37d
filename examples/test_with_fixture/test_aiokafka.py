"""aiokafka against the same session broker, from async tests (pytest-asyncio)."""

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


async def test_send_and_inspect(kafka_broker, kafka_topic):
    producer = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    await producer.start()
    try:
        async with kafka_broker.assert_produces(kafka_topic) as got:
            await producer.send_and_wait(kafka_topic, b"from aiokafka", key=b"a")
    finally:
        await producer.stop()
    assert [(r.offset, r.key, r.value) for r in got] == [(0, b"a", b"from aiokafka")]


async def test_consume_what_the_test_added(kafka_broker, kafka_topic):
    kafka_broker.add_record(kafka_topic, b"seeded", key=b"s")
    consumer = AIOKafkaConsumer(kafka_topic, bootstrap_servers=kafka_broker.bootstrap,
                                group_id=kafka_broker.group("g"), auto_offset_reset="earliest")
    await consumer.start()
    try:
        msg = await consumer.getone()
        await consumer.commit()
    finally:
        await consumer.stop()
    assert (msg.key, msg.value, msg.offset) == (b"s", b"seeded", 0)
    assert await kafka_broker.wait_for_committed_async(kafka_broker.group("g"), kafka_topic, 0) == 1

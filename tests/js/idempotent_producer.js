// kafkajs idempotent producer for tests/integration/test_idempotence_kafkajs.py.
// usage: node idempotent_producer.js <bootstrap> <topic> <partitions> <records>
// Sends value "<partition>:<n>" (n counting per partition, 5 digits) in batches of 100
// records, waits for each send, and prints {"sent": N} on success.
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic, partitionsArg, recordsArg] = process.argv.slice(2);
  const partitions = Number(partitionsArg);
  const records = Number(recordsArg);
  const kafka = new Kafka({
    clientId: "kafkajs-idempotent",
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
    retry: { initialRetryTime: 20, retries: 30 },
  });
  // kafkajs allows idempotence only with one request in flight per connection
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const counts = new Array(partitions).fill(0);
  let sent = 0;
  while (sent < records) {
    const byPartition = new Map();
    for (let i = 0; i < 100 && sent < records; i++, sent++) {
      const p = sent % partitions;
      const value = `${p}:${String(counts[p]).padStart(5, "0")}`;
      counts[p] += 1;
      if (!byPartition.has(p)) byPartition.set(p, []);
      byPartition.get(p).push({ key: `k${sent}`, value, partition: p });
    }
    await producer.sendBatch({
      acks: -1,
      topicMessages: [{ topic, messages: [].concat(...byPartition.values()) }],
    });
  }
  await producer.disconnect();
  console.log(JSON.stringify({ sent }));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});

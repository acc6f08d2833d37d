// kafkajs producer through a delayed Metadata, for tests/faults/test_faults_kafkajs.py.
// usage: node delayed_metadata.js <bootstrap> <topic> <records> <requestTimeoutMs>
// Sends <records> values "0".."n-1" one send each (acks=-1) with a short request timeout, counts
// the request timeouts kafkajs reports, and prints {"sent": N, "timeouts": T} on success.
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [bootstrap, topic, recordsArg, timeoutArg] = process.argv.slice(2);
  const records = Number(recordsArg);
  const kafka = new Kafka({
    clientId: "kafkajs-delayed-metadata",
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
    requestTimeout: Number(timeoutArg),
    retry: { initialRetryTime: 50, retries: 10 },
  });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  let timeouts = 0;
  producer.on(producer.events.REQUEST_TIMEOUT, () => { timeouts += 1; });
  await producer.connect();
  for (let i = 0; i < records; i++) {
    await producer.send({ topic, acks: -1, messages: [{ value: String(i) }] });
  }
  await producer.disconnect();
  console.log(JSON.stringify({ sent: records, timeouts }));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});

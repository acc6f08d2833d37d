// kafkajs over SSL, SASL_PLAINTEXT and SASL_SSL, for tests/integration/test_security_kafkajs.py and
// tests/reference/test_security_reference.py.
// usage: node secure_client.js '<JSON list of scenarios>'
// A scenario: {"name", "brokers": ["host:port"], "topic", "ca"?: PEM file (SSL with server
// verification), "servername"?: host name to verify, "sasl"?: {"mechanism", "username", "password"}
// or {"mechanism": "oauthbearer", "token"}}. Each produces two records and consumes them back in a
// group; prints one JSON list of {"name", "ok", "values", "error"}: error is the first failure's
// kafkajs error name and message.
const fs = require("fs");
const { Kafka, logLevel } = require("kafkajs");

async function run(s) {
  const config = {
    clientId: `kafkajs-${s.name}`,
    brokers: s.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5000,
    authenticationTimeout: 5000,
    // a few retries: a topic auto-created by the first send has no leader for a moment on Kafka
    retry: { retries: s.retries === undefined ? 3 : s.retries, initialRetryTime: 100 },
  };
  if (s.ca) {
    config.ssl = { ca: [fs.readFileSync(s.ca, "utf-8")], rejectUnauthorized: true };
    if (s.servername) config.ssl.servername = s.servername;
  }
  if (s.sasl) {
    if (s.sasl.mechanism === "oauthbearer") {
      config.sasl = { mechanism: "oauthbearer", oauthBearerProvider: async () => ({ value: s.sasl.token }) };
    } else {
      config.sasl = { mechanism: s.sasl.mechanism, username: s.sasl.username, password: s.sasl.password };
    }
  }
  const kafka = new Kafka(config);
  const producer = kafka.producer({ allowAutoTopicCreation: true });
  const consumer = kafka.consumer({ groupId: `g-${s.name}`, retry: { retries: 2 } });
  try {
    await producer.connect();
    await producer.send({ topic: s.topic, acks: -1, messages: [{ value: `${s.name}-1` }, { value: `${s.name}-2` }] });
    await producer.disconnect();
    await consumer.connect();
    await consumer.subscribe({ topic: s.topic, fromBeginning: true });
    const values = [];
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("timed out consuming")), 20000);
      consumer.run({
        eachMessage: async ({ message }) => {
          values.push(message.value.toString());
          if (values.length >= 2) {
            clearTimeout(timer);
            resolve();
          }
        },
      }).catch(reject);
    });
    await consumer.disconnect();
    return { name: s.name, ok: true, values, error: null };
  } catch (e) {
    await producer.disconnect().catch(() => {});
    await consumer.disconnect().catch(() => {});
    return { name: s.name, ok: false, values: [], error: `${e.name}: ${e.message}` };
  }
}

async function main() {
  const scenarios = JSON.parse(process.argv[2]);
  const results = [];
  for (const s of scenarios) results.push(await run(s));
  console.log(JSON.stringify(results));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});

// kafkajs as PLAIN users over SASL_PLAINTEXT against a broker with ACLs, for
// tests/reference/test_acl_clients_reference.py.
// usage: node acl_client.js <bootstrap> <action>...
// Each action is "USER:produce:TOPIC" (one record) or "USER:consume:TOPIC:GROUP" (from the
// beginning, until one record arrives); the password is "<USER>-secret". Prints one line per
// action, "<action> <outcome>": OK, TIMEOUT, or the broker's error as kafkajs names it (the `type`
// of the innermost KafkaJSProtocolError, e.g. TOPIC_AUTHORIZATION_FAILED).
const { Kafka, logLevel } = require("kafkajs");

const TIMEOUT_MS = 15000;

function outcome(e) {
  for (let c = e; c; c = c.cause || c.originalError) {
    if (c.type) return c.type;
    if (!c.cause && !c.originalError) return c.name;
  }
  return String(e);
}

function client(bootstrap, user) {
  return new Kafka({
    clientId: `kafkajs-${user}`,
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
    sasl: { mechanism: "plain", username: user, password: `${user}-secret` },
    retry: { initialRetryTime: 50, retries: 2 },
  });
}

async function produce(bootstrap, user, topic) {
  const producer = client(bootstrap, user).producer();
  await producer.connect();
  try {
    await producer.send({ topic, messages: [{ value: "kafkajs" }] });
    return "OK";
  } finally {
    await producer.disconnect();
  }
}

async function consume(bootstrap, user, topic, group) {
  const consumer = client(bootstrap, user).consumer({
    groupId: group,
    retry: { retries: 0, restartOnFailure: async () => false },
  });
  await consumer.connect();
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve("TIMEOUT"), TIMEOUT_MS);
      consumer.on(consumer.events.CRASH, (ev) => {
        clearTimeout(timer);
        reject(ev.payload.error);
      });
      consumer
        .subscribe({ topic, fromBeginning: true })
        .then(() =>
          consumer.run({
            autoCommit: false,
            eachMessage: async () => {
              clearTimeout(timer);
              resolve("OK");
            },
          }),
        )
        .catch((e) => {
          clearTimeout(timer);
          reject(e);
        });
    });
  } finally {
    await consumer.disconnect();
  }
}

async function main() {
  const [bootstrap, ...actions] = process.argv.slice(2);
  for (const action of actions) {
    const [user, what, topic, group] = action.split(":");
    let result;
    try {
      result = what === "produce" ? await produce(bootstrap, user, topic) : await consume(bootstrap, user, topic, group);
    } catch (e) {
      result = outcome(e);
    }
    console.log(`${action} ${result}`);
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);

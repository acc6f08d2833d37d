// The Java transactional producer against a broker: exactly-once consume-transform-produce, abort,
// fencing and the transaction timeout. Compiled against whichever kafka-clients is on the class
// path: 4.x runs transactions v2 (KIP-890 part 2) when the broker finalizes transaction.version 2,
// 3.9.1 runs the classic protocol (v1). Run with the JDK alone:
//
//   java -cp "<kafka-clients and its dependencies>" tools/java/TxnCheck.java 127.0.0.1:9092 prefix
//
// Each step prints one line, "OK <step> <detail>" or "FAIL <step> <exception chain>"; the details
// are the same on any broker that behaves as Kafka does (no offsets, ids or timings in them):
//   eos       20 records read from `in`, upper-cased into `out` and their offsets committed, in
//             transactions of at most 5 records (read_committed consumer, sendOffsetsToTransaction);
//             then what a read_committed reader of `out` sees, the group's committed offset, and
//             whether the producer epoch grew by one per transaction (transactions v2) or stayed.
//   abort     an aborted transaction of 5 records then a committed one of 3: read_committed sees 3,
//             read_uncommitted 8.
//   fencing   a second producer with the same transactional id fences the first in the middle of
//             a transaction: the first one's commit fails (exception class printed), the second
//             commits, and only its record is visible.
//   timeout   a transaction left open past transaction.timeout.ms is aborted by the coordinator:
//             what commitTransaction then throws, whether the same producer can go on (abort,
//             a new transaction committed), and what a reader sees.
// Exit status: 0 when every step is OK, 1 otherwise.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnCheck {
    static final int TIMEOUT_S = 60;
    static int failures = 0;
    static String bootstrap;

    interface Step {
        String run() throws Exception;
    }

    static String chain(Throwable e) {
        StringBuilder why = new StringBuilder();
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof java.util.concurrent.ExecutionException) {
                continue;
            }
            why.append(why.length() == 0 ? "" : " <- ").append(c.getClass().getName()).append(": ")
                    .append(String.valueOf(c.getMessage()).replace('\n', ' '));
        }
        return why.toString();
    }

    /** The class names of an exception and its causes: what the test compares across brokers. */
    static String classes(Throwable e) {
        StringBuilder out = new StringBuilder();
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            out.append(out.length() == 0 ? "" : "<-").append(c.getClass().getSimpleName());
        }
        return out.toString();
    }

    static void step(String name, Step body) {
        try {
            System.out.println("OK " + name + " " + body.run());
        } catch (Throwable e) {
            System.out.println("FAIL " + name + " " + chain(e));
            failures++;
        } finally {
            System.out.flush();
        }
    }

    static Properties producerProps(String txnId, int timeoutMs) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, timeoutMs);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, TIMEOUT_S * 1000);
        return p;
    }

    static KafkaConsumer<String, String> consumer(String group, String isolation) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        if (group != null) {
            c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(c);
    }

    /** Every value a reader of `topic` (partition 0) sees up to the end, with the isolation level. */
    static List<String> readAll(String topic, String isolation) {
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(null, isolation)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(Collections.singletonList(tp));
            c.seekToBeginning(Collections.singletonList(tp));
            long end = c.endOffsets(Collections.singletonList(tp)).get(tp);
            long deadline = System.currentTimeMillis() + TIMEOUT_S * 1000L;
            while (c.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.add(r.value());
                }
            }
        }
        return out;
    }

    static TransactionDescription describe(Admin admin, String txnId) throws Exception {
        return admin.describeTransactions(Collections.singletonList(txnId)).description(txnId)
                .get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String prefix = args[1];
        String in = prefix + "-in", out = prefix + "-out", aborted = prefix + "-abort", fenced = prefix + "-fence",
                timedOut = prefix + "-timeout";
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            List<NewTopic> topics = new ArrayList<>();
            for (String t : new String[] {in, out, aborted, fenced, timedOut}) {
                topics.add(new NewTopic(t, 1, (short) 1));
            }
            admin.createTopics(topics).all().get(TIMEOUT_S, TimeUnit.SECONDS);
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
                for (int i = 0; i < 20; i++) {
                    p.send(new ProducerRecord<>(in, "k" + i, "value-" + i));
                }
                p.flush();
            }

            step("eos", () -> {
                String group = prefix + "-eos";
                String txnId = prefix + "-eos-tid";
                int transactions = 0, copied = 0;
                try (KafkaConsumer<String, String> c = consumer(group, "read_committed");
                     KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(txnId, 60000))) {
                    p.initTransactions();
                    int first = describe(admin, txnId).producerEpoch();
                    c.subscribe(Collections.singletonList(in));
                    long deadline = System.currentTimeMillis() + TIMEOUT_S * 1000L;
                    while (copied < 20 && System.currentTimeMillis() < deadline) {
                        ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                        if (recs.isEmpty()) {
                            continue;
                        }
                        p.beginTransaction();
                        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                        for (ConsumerRecord<String, String> r : recs) {
                            p.send(new ProducerRecord<>(out, r.key(), r.value().toUpperCase()));
                            offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                            copied++;
                        }
                        p.sendOffsetsToTransaction(offsets, c.groupMetadata());
                        p.commitTransaction();
                        transactions++;
                    }
                    int last = describe(admin, txnId).producerEpoch();
                    long committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                            .get(TIMEOUT_S, TimeUnit.SECONDS).get(new TopicPartition(in, 0)).offset();
                    List<String> seen = readAll(out, "read_committed");
                    List<String> expected = new ArrayList<>();
                    for (int i = 0; i < 20; i++) {
                        expected.add("VALUE-" + i);
                    }
                    String bumps = last - first == transactions ? "per-transaction" : last == first ? "none"
                            : "other(" + (last - first) + "/" + transactions + ")";
                    return "copied=" + copied + " visible=" + seen.size() + " exact=" + seen.equals(expected)
                            + " committed=" + committed + " epoch-bumps=" + bumps;
                }
            });

            step("abort", () -> {
                try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(prefix + "-abort-tid", 60000))) {
                    p.initTransactions();
                    p.beginTransaction();
                    for (int i = 0; i < 5; i++) {
                        p.send(new ProducerRecord<>(aborted, "a" + i));
                    }
                    p.flush();
                    p.abortTransaction();
                    p.beginTransaction();
                    for (int i = 0; i < 3; i++) {
                        p.send(new ProducerRecord<>(aborted, "c" + i));
                    }
                    p.commitTransaction();
                }
                return "read_committed=" + readAll(aborted, "read_committed") + " read_uncommitted="
                        + readAll(aborted, "read_uncommitted").size();
            });

            step("fencing", () -> {
                String txnId = prefix + "-fence-tid";
                String zombie;
                try (KafkaProducer<String, String> a = new KafkaProducer<>(producerProps(txnId, 60000))) {
                    a.initTransactions();
                    a.beginTransaction();
                    a.send(new ProducerRecord<>(fenced, "zombie")).get(TIMEOUT_S, TimeUnit.SECONDS);
                    try (KafkaProducer<String, String> b = new KafkaProducer<>(producerProps(txnId, 60000))) {
                        b.initTransactions();  // aborts a's transaction, fencing a
                        try {
                            a.send(new ProducerRecord<>(fenced, "zombie-2")).get(TIMEOUT_S, TimeUnit.SECONDS);
                            a.commitTransaction();
                            zombie = "committed";
                        } catch (Exception e) {
                            zombie = classes(e);
                        }
                        b.beginTransaction();
                        b.send(new ProducerRecord<>(fenced, "new"));
                        b.commitTransaction();
                    }
                }
                return "zombie=" + zombie + " read_committed=" + readAll(fenced, "read_committed");
            });

            step("timeout", () -> {
                String txnId = prefix + "-timeout-tid";
                String commit, goOn;
                try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(txnId, 1000))) {
                    p.initTransactions();
                    p.beginTransaction();
                    p.send(new ProducerRecord<>(timedOut, "late")).get(TIMEOUT_S, TimeUnit.SECONDS);
                    long deadline = System.currentTimeMillis() + TIMEOUT_S * 1000L;
                    String state = "";
                    while (System.currentTimeMillis() < deadline) {
                        state = describe(admin, txnId).state().toString();
                        if (!state.equalsIgnoreCase("Ongoing") && !state.toLowerCase().startsWith("prepare")) {
                            break;
                        }
                        Thread.sleep(200);
                    }
                    try {
                        p.commitTransaction();
                        commit = "committed";
                    } catch (Exception e) {
                        commit = classes(e);
                    }
                    try {
                        p.abortTransaction();
                        p.beginTransaction();
                        p.send(new ProducerRecord<>(timedOut, "after"));
                        p.commitTransaction();
                        goOn = "yes";
                    } catch (Exception e) {
                        goOn = classes(e);
                    }
                    commit = state + " commit=" + commit;
                }
                if (!goOn.equals("yes")) {  // a fatal error: a new producer takes over
                    try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(txnId, 60000))) {
                        p.initTransactions();
                        p.beginTransaction();
                        p.send(new ProducerRecord<>(timedOut, "after"));
                        p.commitTransaction();
                    }
                }
                return "state=" + commit + " same-producer-goes-on=" + goOn + " read_committed="
                        + readAll(timedOut, "read_committed");
            });
        }
        System.exit(failures == 0 ? 0 : 1);
    }
}

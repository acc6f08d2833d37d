// The official Java client (kafka-clients) against a broker: the client Spark's Kafka connector
// is built on. Run with the JDK alone, no build tool:
//
//   java -cp "$(python tools/java/classpath.py)" tools/java/ClientCheck.java 127.0.0.1:9092
//
// Steps, each printed as one line "OK <step> <detail>" or "FAIL <step> <exception>: <message>":
//   create_topic      Admin.createTopics, 2 partitions
//   produce_idempotent   a producer with the Java defaults (enable.idempotence=true, acks=all),
//                        which needs InitProducerId (KIP-98) and sequence numbers in Produce
//   produce_plain     the same records with enable.idempotence=false (so later steps can run
//                     when the broker lacks idempotence)
//   consume_group     a consumer in a group (subscribe, JoinGroup/SyncGroup, fetch everything,
//                     commitSync)
//   committed         Admin.listConsumerGroupOffsets equals the log end offsets
//   list_offsets      Admin.listOffsets: earliest, latest, forTimestamp, maxTimestamp
//   transactions      a transactional producer commits 4 records and aborts 2; a read_committed
//                     consumer sees exactly the 4 (and the control records' offsets are skipped)
// Exit status: 0 when every step is OK, 1 otherwise.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ClientCheck {
    static final int RECORDS = 100;
    static final int TIMEOUT_S = 30;
    static int failures = 0;

    interface Step {
        String run() throws Exception;
    }

    static boolean step(String name, Step body) {
        try {
            System.out.println("OK " + name + " " + body.run());
            return true;
        } catch (Throwable e) {
            // The whole cause chain: the client wraps the broker's answer (e.g. an
            // UnsupportedVersionException) in a generic KafkaException.
            StringBuilder why = new StringBuilder();
            for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
                if (c instanceof java.util.concurrent.ExecutionException) {
                    continue;
                }
                why.append(why.length() == 0 ? "" : " <- ").append(c.getClass().getName()).append(": ")
                        .append(String.valueOf(c.getMessage()).replace('\n', ' '));
            }
            System.out.println("FAIL " + name + " " + why);
            failures++;
            return false;
        } finally {
            System.out.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args.length > 0 ? args[0] : "127.0.0.1:9092";
        String topic = args.length > 1 ? args[1] : "java-check-" + System.currentTimeMillis();
        String group = topic + "-group";

        Properties common = new Properties();
        common.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        common.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        common.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");

        try (Admin admin = Admin.create(common)) {
            step("create_topic", () -> {
                admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return topic;
            });

            long beforeProduce = System.currentTimeMillis();
            boolean idempotentOk = step("produce_idempotent", () -> produce(bootstrap, topic, true, 0));
            step("produce_plain", () -> produce(bootstrap, topic, false, idempotentOk ? RECORDS : 0));
            int expected = (idempotentOk ? 2 : 1) * RECORDS;

            step("consume_group", () -> consume(bootstrap, topic, group, expected));

            List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            step("committed", () -> {
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata().get(TIMEOUT_S, TimeUnit.SECONDS);
                long sum = 0;
                for (TopicPartition tp : tps) {
                    OffsetAndMetadata om = committed.get(tp);
                    if (om == null) {
                        throw new IllegalStateException("no committed offset for " + tp + ": " + committed);
                    }
                    sum += om.offset();
                }
                if (sum != expected) {
                    throw new IllegalStateException("committed offsets sum to " + sum + ", expected " + expected);
                }
                return "sum=" + sum;
            });

            step("list_offsets", () -> {
                long earliest = 0, latest = 0;
                for (TopicPartition tp : tps) {
                    earliest += listOffset(admin, tp, OffsetSpec.earliest()).offset();
                    latest += listOffset(admin, tp, OffsetSpec.latest()).offset();
                }
                if (earliest != 0 || latest != expected) {
                    throw new IllegalStateException("earliest sum " + earliest + " (want 0), latest sum " + latest
                            + " (want " + expected + ")");
                }
                // Every record was sent after beforeProduce: forTimestamp finds each partition's first one.
                long fromTime = 0;
                for (TopicPartition tp : tps) {
                    fromTime += listOffset(admin, tp, OffsetSpec.forTimestamp(beforeProduce)).offset();
                }
                if (fromTime != 0) {
                    throw new IllegalStateException("forTimestamp(before produce) offsets sum to " + fromTime);
                }
                // A timestamp after everything: no offset (-1), as Kafka answers.
                long future = listOffset(admin, tps.get(0), OffsetSpec.forTimestamp(System.currentTimeMillis() + 3_600_000)).offset();
                if (future != -1) {
                    throw new IllegalStateException("forTimestamp(future) = " + future + ", expected -1");
                }
                ListOffsetsResultInfo max = listOffset(admin, tps.get(0), OffsetSpec.maxTimestamp());
                if (max.offset() < 0 || max.timestamp() < beforeProduce) {
                    throw new IllegalStateException("maxTimestamp = offset " + max.offset() + " ts " + max.timestamp());
                }
                return "earliest=0 latest=" + latest + " forTimestamp=0 future=-1 maxTimestamp.offset=" + max.offset();
            });

            step("transactions", () -> transactions(admin, bootstrap, topic + "-txn"));
        }
        System.out.println(failures == 0 ? "ALL OK" : failures + " FAILED");
        System.exit(failures == 0 ? 0 : 1);
    }

    static String transactions(Admin admin, String bootstrap, String topic) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(TIMEOUT_S, TimeUnit.SECONDS);
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, topic + "-tid");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 4; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "c" + i, "committed"));
            }
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 2; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "a" + i, "aborted"));
            }
            producer.flush();
            producer.abortTransaction();
        }
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> keys = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + TIMEOUT_S * 1000L;
            // 4 committed + marker + 2 aborted + marker: the position ends at 8
            while (consumer.position(tp) < 8 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    keys.add(r.key());
                }
            }
            if (!keys.equals(List.of("c0", "c1", "c2", "c3"))) {
                throw new IllegalStateException("read_committed saw " + keys + " up to " + consumer.position(tp));
            }
            return "committed 4, aborted 2, read_committed saw " + keys;
        }
    }

    static ListOffsetsResultInfo listOffset(Admin admin, TopicPartition tp, OffsetSpec spec) throws Exception {
        return admin.listOffsets(Map.of(tp, spec)).partitionResult(tp).get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    static String produce(String bootstrap, String topic, boolean idempotent, int firstKey) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        if (!idempotent) {
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        }  // else: the Java defaults, enable.idempotence=true and acks=all
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = firstKey; i < firstKey + RECORDS; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, "v" + i)));
            }
            long maxOffset = -1;
            for (Future<RecordMetadata> f : sent) {
                maxOffset = Math.max(maxOffset, f.get(TIMEOUT_S, TimeUnit.SECONDS).offset());
            }
            return RECORDS + " records, idempotence=" + idempotent + ", max offset " + maxOffset;
        }
    }

    static String consume(String bootstrap, String topic, String group, int expected) throws Exception {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(Collections.singletonList(topic));
            Map<String, String> seen = new HashMap<>();
            long deadline = System.currentTimeMillis() + TIMEOUT_S * 1000L;
            while (seen.size() < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    String want = "v" + r.key().substring(1);
                    if (!want.equals(r.value())) {
                        throw new IllegalStateException("record " + r.key() + " has value " + r.value());
                    }
                    seen.put(r.key(), r.value());
                }
            }
            if (seen.size() != expected) {
                throw new IllegalStateException("consumed " + seen.size() + " distinct records, expected " + expected);
            }
            consumer.commitSync(Duration.ofSeconds(TIMEOUT_S));
            return seen.size() + " records, assignment " + consumer.assignment().size() + " partitions, committed";
        }
    }
}

// Issue 34's share-group scenarios with the Java KafkaShareConsumer against one broker;
// tests/reference/test_share_delivery.py runs it against minibroker and Apache Kafka and compares
// the RESULT lines (the confluent twins are in tests/reference/share_delivery.py).
//
//   java -cp <kafka 4.4 jars>:<classes> ShareDeliveryCheck BOOTSTRAP PREFIX
//
// - read_committed: two transactional producers, one alternating commit and abort (5 aborted
//   transactions of one producer id), the other committing 7; 120 committed and 50 aborted
//   records; a read_committed member gets the 120 and none of the 50.
// - deleted_topic: 5 records acquired, the topic deleted, then acknowledged with commitSync:
//   UNKNOWN_TOPIC_ID for the partition.
// - close_receipts: 12 records on 3 partitions acknowledged, not committed, and the consumer
//   closed: the acknowledgement-commit callback reports the 12 offsets without error.
// - bounds: max.poll.records 30 in the batch_optimized acquire mode on a 50-record batch then 50
//   batches of one: what each poll returns.
// - dlq (KIP-1191): the topics and groups of tests/reference/share_delivery.py's dlq scenario
//   (prefix PREFIX + "dlq"); each group's member rejects offset 0, releases offset 1 at every
//   delivery (limit 2) and accepts the rest; the test then reads the DLQ topics in Python.
// - renew (KIP-1222): 5 records acknowledged RENEW and committed, then ACCEPT and committed, in a
//   group with share.renew.acknowledge.enable true and one with false: the outcomes.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class ShareDeliveryCheck {
    static String boot;

    static void out(String s) { System.out.println(s); System.out.flush(); }

    // The scenarios, and the groups within one, share no group and no topic that one of them
    // deletes, so they run at once and print in a fixed order: one after the other, a Kafka 4.4
    // broker took 89 s (each new share member waits for the assignment of a heartbeat) and
    // minibroker 21 s, most of it the quiet periods below.
    static final ExecutorService POOL = Executors.newCachedThreadPool();

    static List<String> all(List<Callable<String>> tasks) throws Exception {
        List<Future<String>> running = new ArrayList<>();
        for (Callable<String> t : tasks) running.add(POOL.submit(t));
        List<String> results = new ArrayList<>();
        for (Future<String> f : running) results.add(f.get());
        return results;
    }

    static KafkaShareConsumer<String, String> consumer(String group, int maxPoll, String mode) {
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("max.poll.records", Integer.toString(maxPoll));
        p.put("share.acquire.mode", mode);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return new KafkaShareConsumer<>(p);
    }

    static Properties producerProps(String txnId, int lingerMs) {
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("linger.ms", Integer.toString(lingerMs));
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        if (txnId != null) p.put("transactional.id", txnId);
        return p;
    }

    static void groupConfig(Admin admin, String group, Map<String, String> cfg) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        for (Map.Entry<String, String> e : cfg.entrySet())
            ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()), AlterConfigOp.OpType.SET));
        admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops)).all().get();
    }

    static void topic(Admin admin, String name, int partitions, String group, Map<String, String> cfg) throws Exception {
        admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get();
        Map<String, String> all = new HashMap<>(cfg);
        all.put("share.auto.offset.reset", "earliest");
        groupConfig(admin, group, all);
    }

    static String readCommitted(Admin admin, String pre) throws Exception {
        String topic = pre + "rc", group = pre + "g-rc";
        topic(admin, topic, 1, group, Map.of("share.isolation.level", "read_committed"));
        try (KafkaProducer<String, String> a = new KafkaProducer<>(producerProps(topic + "-a", 0));
             KafkaProducer<String, String> b = new KafkaProducer<>(producerProps(topic + "-b", 0))) {
            a.initTransactions();
            b.initTransactions();
            for (int i = 0; i < 10; i++) {
                boolean commitA = i % 2 == 0, withB = i < 7;
                a.beginTransaction();
                if (withB) b.beginTransaction();
                for (int j = 0; j < 10; j++) {  // the two transactions' batches interleave
                    a.send(new ProducerRecord<>(topic, 0, null, (commitA ? "c-a" : "x-a") + i + "-" + j)).get();
                    if (withB) b.send(new ProducerRecord<>(topic, 0, null, "c-b" + i + "-" + j)).get();
                }
                if (commitA) a.commitTransaction(); else a.abortTransaction();
                if (withB) b.commitTransaction();
            }
        }
        try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(null, 0))) {
            p.send(new ProducerRecord<>(topic, 0, null, "end")).get();
        }
        Map<String, Integer> seen = new HashMap<>();
        try (KafkaShareConsumer<String, String> c = consumer(group, 500, "batch_optimized")) {
            c.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + 60000;
            while (!seen.containsKey("end") && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    seen.merge(r.value(), 1, Integer::sum);
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                c.commitSync();
            }
        }
        long committed = seen.keySet().stream().filter(v -> v.startsWith("c-")).count();
        long aborted = seen.keySet().stream().filter(v -> v.startsWith("x-")).count();
        int received = seen.values().stream().mapToInt(Integer::intValue).sum();
        return "RESULT read_committed received=" + received + " committed=" + committed + " aborted=" + aborted;
    }

    static String deletedTopic(Admin admin, String pre) throws Exception {
        String topic = pre + "del", group = pre + "g-del";
        topic(admin, topic, 1, group, Map.of());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(null, 0))) {
            for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(topic, 0, null, "v" + i)).get();
        }
        List<String> outcomes = new ArrayList<>();
        int got = 0;
        try (KafkaShareConsumer<String, String> c = consumer(group, 5, "batch_optimized")) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> records = new ArrayList<>();
            long end = System.currentTimeMillis() + 30000;
            while (records.isEmpty() && System.currentTimeMillis() < end)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) records.add(r);
            got = records.size();
            admin.deleteTopics(List.of(topic)).all().get();
            Thread.sleep(1000);
            for (ConsumerRecord<String, String> r : records) c.acknowledge(r, AcknowledgeType.ACCEPT);
            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : c.commitSync().entrySet())
                outcomes.add(e.getValue().map(x -> x.getClass().getSimpleName()).orElse("ok"));
        }
        return "RESULT deleted_topic got=" + got + " commit=" + outcomes;
    }

    static String closeReceipts(Admin admin, String pre) throws Exception {
        String topic = pre + "close";
        admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
        try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(null, 0))) {
            for (int i = 0; i < 12; i++) p.send(new ProducerRecord<>(topic, i % 3, null, "v" + i)).get();
        }
        List<Callable<String>> rounds = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            String group = pre + "g-close-" + round;
            rounds.add(() -> {
                groupConfig(admin, group, Map.of("share.auto.offset.reset", "earliest"));
                List<String> receipts = Collections.synchronizedList(new ArrayList<>());
                int got = 0;
                KafkaShareConsumer<String, String> c = consumer(group, 12, "batch_optimized");
                c.setAcknowledgementCommitCallback((offsets, exception) -> {
                    for (Map.Entry<TopicIdPartition, Set<Long>> e : offsets.entrySet())
                        for (Long o : e.getValue())
                            receipts.add((exception == null ? "ok" : exception.getClass().getSimpleName()) + ":"
                                + e.getKey().partition() + ":" + o);
            });
            c.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + 30000;
            while (got < 12 && System.currentTimeMillis() < end)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    got++;
                }
            int before = receipts.size();
            c.close();
            Map<String, Integer> kinds = new TreeMap<>();
            for (String r : receipts) kinds.merge(r.split(":")[0], 1, Integer::sum);
            return "got=" + got + " receipts=" + kinds + " distinct=" + new HashSet<>(receipts).size()
                + " at_close=" + (receipts.size() > before);
            });
        }
        return "RESULT close_receipts " + String.join(" | ", all(rounds));
    }

    static String bounds(Admin admin, String pre) throws Exception {
        String topic = pre + "bounds", group = pre + "g-bounds";
        topic(admin, topic, 1, group, Map.of());
        try (KafkaProducer<String, String> big = new KafkaProducer<>(producerProps(null, 2000))) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < 50; i++) sent.add(big.send(new ProducerRecord<>(topic, 0, null, "b" + i)));
            big.flush();
            for (Future<RecordMetadata> f : sent) f.get();
        }
        try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(null, 0))) {
            for (int i = 0; i < 50; i++) p.send(new ProducerRecord<>(topic, 0, null, "s" + i)).get();
        }
        List<Integer> polls = new ArrayList<>();
        int total = 0;
        try (KafkaShareConsumer<String, String> c = consumer(group, 30, "batch_optimized")) {
            c.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + 30000;
            while (total < 100 && System.currentTimeMillis() < end) {
                int n = 0;
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    n++;
                }
                if (n > 0) { polls.add(n); total += n; c.commitSync(); }
            }
        }
        return "RESULT bounds polls=" + polls;
    }

    static String dlq(Admin admin, String pre) throws Exception {
        String p = pre + "dlq", topic = p + "-dlqsrc", dlqTopic = "dlq." + p;
        admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1),
            new NewTopic(dlqTopic, 2, (short) 1).configs(Map.of("errors.deadletterqueue.group.enable", "true")),
            new NewTopic(dlqTopic + "-off", 1, (short) 1))).all().get();
        Properties pp = producerProps(null, 0);
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(pp)) {
            for (int part = 0; part < 3; part++)
                for (int i = 0; i < 4; i++)
                    prod.send(new ProducerRecord<>(topic, part, "k" + part + "-" + i, "v" + part + "-" + i)).get();
        }
        Map<String, String> names = Map.of("copy", dlqTopic, "nocopy", dlqTopic, "off", dlqTopic + "-off",
            "unprefixed", "nodlq." + p);
        List<Callable<String>> seen = new ArrayList<>();
        for (String c : List.of("copy", "nocopy", "off", "unprefixed")) {
            String group = p + "-g-dlq-" + c;
            seen.add(() -> {
                groupConfig(admin, group, Map.of("share.auto.offset.reset", "earliest", "share.delivery.count.limit", "2",
                    "errors.deadletterqueue.topic.name", names.get(c),
                    "errors.deadletterqueue.copy.record.enable", Boolean.toString(c.equals("copy"))));
                TreeMap<String, Integer> deliveries = new TreeMap<>();
                try (KafkaShareConsumer<String, String> cons = consumer(group, 50, "batch_optimized")) {
                    cons.subscribe(List.of(topic));
                    long end = System.currentTimeMillis() + 60000, quiet = Long.MAX_VALUE;
                    while (System.currentTimeMillis() < Math.min(end, quiet)) {
                        for (ConsumerRecord<String, String> r : cons.poll(Duration.ofMillis(500))) {
                            deliveries.merge(r.partition() + ":" + r.offset(), 1, Integer::sum);
                            AcknowledgeType t = r.offset() == 0 ? AcknowledgeType.REJECT
                                : r.offset() == 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
                            cons.acknowledge(r, t);
                        }
                        cons.commitSync();
                        int n = deliveries.values().stream().mapToInt(Integer::intValue).sum();
                        if (n >= 15 && quiet == Long.MAX_VALUE) quiet = System.currentTimeMillis() + 3000;
                    }
                }
                return c + ": deliveries=" + deliveries;
            });
        }
        return "RESULT dlq " + String.join(" | ", all(seen));
    }

    static String renew(Admin admin, String pre) throws Exception {
        String topic = pre + "renew";
        admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(producerProps(null, 0))) {
            for (int i = 0; i < 5; i++) prod.send(new ProducerRecord<>(topic, 0, null, "r" + i)).get();
        }
        List<Callable<String>> rounds = new ArrayList<>();
        for (String enabled : List.of("true", "false")) {
            String group = pre + "g-renew-" + enabled;
            rounds.add(() -> {
                groupConfig(admin, group, Map.of("share.auto.offset.reset", "earliest",
                    "share.renew.acknowledge.enable", enabled));
                List<String> steps = new ArrayList<>();
                int redelivered = 0;
                try (KafkaShareConsumer<String, String> c = consumer(group, 5, "batch_optimized")) {
                    c.subscribe(List.of(topic));
                    List<ConsumerRecord<String, String>> got = new ArrayList<>();
                    long end = System.currentTimeMillis() + 30000;
                    while (got.size() < 5 && System.currentTimeMillis() < end)
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) got.add(r);
                    steps.add("got=" + got.size());
                    for (AcknowledgeType t : List.of(AcknowledgeType.RENEW, AcknowledgeType.ACCEPT)) {
                        try {
                            for (ConsumerRecord<String, String> r : got) c.acknowledge(r, t);
                            List<String> outcome = new ArrayList<>();
                            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : c.commitSync().entrySet())
                                outcome.add(e.getValue().map(x -> x.getClass().getSimpleName()).orElse("ok"));
                            steps.add(t + "=" + outcome);
                        } catch (RuntimeException e) {
                            steps.add(t + "=" + e.getClass().getSimpleName());
                        }
                    }
                    long quiet = System.currentTimeMillis() + 3000;
                    while (System.currentTimeMillis() < quiet)
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                            redelivered++;
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                        }
                } catch (RuntimeException e) {
                    steps.add("close=" + e.getClass().getSimpleName());
                }
                return "enable=" + enabled + " " + String.join(" ", steps) + " redelivered=" + redelivered;
            });
        }
        return "RESULT renew " + String.join(" | ", all(rounds));
    }

    public static void main(String[] args) throws Exception {
        boot = args[0];
        String pre = args[1];
        Properties ap = new Properties();
        ap.put("bootstrap.servers", boot);
        try (Admin admin = Admin.create(ap)) {
            for (String result : all(List.of(() -> readCommitted(admin, pre), () -> deletedTopic(admin, pre),
                    () -> closeReceipts(admin, pre), () -> bounds(admin, pre), () -> dlq(admin, pre),
                    () -> renew(admin, pre))))
                out(result);
        }
        out("DONE");
        System.exit(0);
    }
}

// The Java consumer 4.x with group.protocol=consumer (KIP-848) against a broker: the broker
// assigns, with the server-side assignor the consumers name (group.remote.assignor), and static
// members (group.instance.id) get their partitions back when they return. Run with the JDK alone:
//
//   java -cp "<kafka-clients 4.x and its dependencies>" tools/java/ConsumerProtocolCheck.java 127.0.0.1:9092 prefix
//
// Each step prints "OK <step> <detail>" or "FAIL <step> <exception chain>"; details hold no ids,
// offsets or timings, so any broker that behaves as Kafka does prints the same lines:
//   range     two static members with group.remote.assignor=range share a 6-partition topic:
//             3 contiguous partitions each, the 60 records read once between them, offsets committed
//   static    the second member closes and a new consumer with its instance id comes back: the
//             same partitions as before, and the first member's are unchanged
//   uniform   a third, dynamic, member of another group with the default (uniform) assignor alone
//             gets all 6 partitions
//   commits   two dynamic members of a fourth group join one after the other; each commits
//             synchronously after every poll through the rebalance: no commit fails (Kafka 4.3+
//             accepts a commit at the member's previous epoch for a partition it still owns)
// Exit status: 0 when every step is OK, 1 otherwise.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ConsumerProtocolCheck {
    static final int TIMEOUT_S = 60;
    static int failures = 0;
    static String bootstrap;
    static int staleCommits = 0;

    interface Step {
        String run() throws Exception;
    }

    static void step(String name, Step body) {
        try {
            System.out.println("OK " + name + " " + body.run());
        } catch (Throwable e) {
            StringBuilder why = new StringBuilder();
            for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
                why.append(why.length() == 0 ? "" : " <- ").append(c.getClass().getName()).append(": ")
                        .append(String.valueOf(c.getMessage()).replace('\n', ' '));
            }
            System.out.println("FAIL " + name + " " + why);
            failures++;
        } finally {
            System.out.flush();
        }
    }

    static KafkaConsumer<String, String> consumer(String group, String instance, String assignor) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        if (instance != null) {
            c.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
        }
        if (assignor != null) {
            c.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
        }
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(c);
    }

    static Set<Integer> partitions(KafkaConsumer<String, String> c) {
        Set<Integer> out = new TreeSet<>();
        for (TopicPartition tp : c.assignment()) {
            out.add(tp.partition());
        }
        return out;
    }

    /** Polls every consumer in turn until each holds `sizes[i]` partitions (and, with `read`,
     * until the records are all read); commits what each read. */
    static void settle(List<KafkaConsumer<String, String>> cs, int[] sizes, List<String> read, int expected) {
        settle(cs, sizes, read, expected, 100);
    }

    static void settle(List<KafkaConsumer<String, String>> cs, int[] sizes, List<String> read, int expected,
                       int pollMs) {
        long deadline = System.currentTimeMillis() + TIMEOUT_S * 1000L;
        while (System.currentTimeMillis() < deadline) {
            boolean done = read == null || read.size() >= expected;
            for (int i = 0; i < cs.size(); i++) {
                for (ConsumerRecord<String, String> r : cs.get(i).poll(Duration.ofMillis(pollMs))) {
                    if (read != null) {
                        read.add(r.value());
                    }
                }
                try {
                    cs.get(i).commitSync();
                } catch (org.apache.kafka.clients.consumer.CommitFailedException e) {
                    // a stale member epoch (the assignment moved on): the next poll gets the new
                    // epoch and the next commit carries it; counted to be compared
                    staleCommits++;
                }
                done &= cs.get(i).assignment().size() == sizes[i];
            }
            if (done) {
                return;
            }
        }
        StringBuilder got = new StringBuilder();
        for (KafkaConsumer<String, String> c : cs) {
            got.append(partitions(c)).append(' ');
        }
        throw new IllegalStateException("not settled: " + got + (read == null ? "" : " read " + read.size()));
    }

    static boolean contiguous(Set<Integer> ps) {
        return ps.isEmpty() || Collections.max(ps) - Collections.min(ps) + 1 == ps.size();
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String prefix = args[1];
        String topic = prefix + "-t";
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(Collections.singletonList(new NewTopic(topic, 6, (short) 1))).all()
                    .get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 60; i++) {
                p.send(new ProducerRecord<>(topic, i % 6, null, "r" + i));
            }
            p.flush();
        }
        String group = prefix + "-range";
        KafkaConsumer<String, String> a = consumer(group, "a", "range");
        KafkaConsumer<String, String> b = consumer(group, "b", "range");
        List<KafkaConsumer<String, String>> both = new ArrayList<>(List.of(a, b));
        a.subscribe(Collections.singletonList(topic));
        b.subscribe(Collections.singletonList(topic));
        Set<Integer>[] before = new Set[2];
        step("range", () -> {
            List<String> read = new ArrayList<>();
            settle(both, new int[] {3, 3}, read, 60);
            before[0] = partitions(a);
            before[1] = partitions(b);
            Set<Integer> all = new TreeSet<>(before[0]);
            all.addAll(before[1]);
            return "sizes=3,3 contiguous=" + (contiguous(before[0]) && contiguous(before[1])) + " all=" + all
                    + " read=" + read.size() + " distinct=" + new TreeSet<>(read).size();
        });
        step("static", () -> {
            b.close();
            KafkaConsumer<String, String> b2 = consumer(group, "b", "range");
            both.set(1, b2);
            b2.subscribe(Collections.singletonList(topic));
            settle(both, new int[] {3, 3}, null, 0);
            boolean same = partitions(b2).equals(before[1]) && partitions(a).equals(before[0]);
            return "same=" + same + (same ? "" : " before=" + before[0] + before[1] + " after=" + partitions(a)
                    + partitions(b2));
        });
        step("uniform", () -> {
            try (KafkaConsumer<String, String> u = consumer(prefix + "-uniform", null, null)) {
                u.subscribe(Collections.singletonList(topic));
                List<String> read = new ArrayList<>();
                settle(List.of(u), new int[] {6}, read, 60);
                return "partitions=" + partitions(u) + " read=" + read.size();
            }
        });
        step("commits", () -> {
            String g = prefix + "-commits";
            List<KafkaConsumer<String, String>> cs = new ArrayList<>();
            int failedBefore = staleCommits;
            try {
                // commits back to back (a 5 ms poll each), so that one is in flight when a
                // heartbeat moves its member to the next epoch
                int[][] plan = {{6}, {3, 3}};
                for (int[] sizes : plan) {
                    KafkaConsumer<String, String> c = consumer(g, null, null);
                    c.subscribe(Collections.singletonList(topic));
                    cs.add(c);
                    settle(cs, sizes, null, 0, 5);
                }
                return "commitFailed=" + (staleCommits - failedBefore);
            } finally {
                for (KafkaConsumer<String, String> c : cs) {
                    c.close();
                }
            }
        });
        for (KafkaConsumer<String, String> c : both) {
            c.close();
        }
        System.exit(failures == 0 ? 0 : 1);
    }
}

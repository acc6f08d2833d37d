// KafkaShareConsumer (KIP-932) scenarios against one broker; tests/reference/test_share_groups.py runs
// it against minibroker and against Apache Kafka and compares the RESULT lines.
//
//   java -cp <kafka 4.4 jars>:<classes> ShareCheck BOOTSTRAP all PREFIX
//   java ... ShareCheck BOOTSTRAP hold TOPIC GROUP N    (child: acquire N records, print HELD, wait to be killed)
//   java ... ShareCheck BOOTSTRAP take TOPIC GROUP N    (accept N records, then leave without closing)
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class ShareCheck {
    static String boot;
    static final int N = 30;

    // The scenarios of `all` have a topic and a group each, so they run at once; each one's lines
    // are kept (on its thread) and printed in the scenarios' order. One after the other, most of
    // the run was each new member waiting for its first assignment.
    static final ThreadLocal<List<String>> LINES = new ThreadLocal<>();

    static void out(String s) {
        List<String> lines = LINES.get();
        if (lines != null) { lines.add(s); return; }
        System.out.println(s);
        System.out.flush();
    }

    static void atOnce(List<Callable<Void>> scenarios) throws Exception {
        ExecutorService pool = Executors.newCachedThreadPool();
        List<Future<List<String>>> running = new ArrayList<>();
        for (Callable<Void> scenario : scenarios)
            running.add(pool.submit(() -> {
                List<String> lines = new ArrayList<>();
                LINES.set(lines);
                try { scenario.call(); } finally { LINES.remove(); }
                return lines;
            }));
        for (Future<List<String>> f : running)
            for (String line : f.get()) out(line);
        pool.shutdown();
    }

    static KafkaShareConsumer<String, String> consumer(String group, int maxPoll) {
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("max.poll.records", Integer.toString(maxPoll));
        p.put("share.acquire.mode", "record_limit");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return new KafkaShareConsumer<>(p);
    }

    static void produce(String topic, List<String> values) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("linger.ms", "0");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            for (String v : values) prod.send(new ProducerRecord<>(topic, 0, null, v)).get();  // one batch each
        }
    }

    static List<String> values(int n) {
        List<String> v = new ArrayList<>();
        for (int i = 0; i < n; i++) v.add("v" + i);
        return v;
    }

    static void groupConfig(Admin admin, String group, Map<String, String> cfg) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        for (Map.Entry<String, String> e : cfg.entrySet())
            ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()), AlterConfigOp.OpType.SET));
        admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops)).all().get();
    }

    /** n consumers in one group share one partition; each accepts what it gets. */
    static void shared(String topic, String group, int n) throws Exception {
        ConcurrentHashMap<Long, Integer> seen = new ConcurrentHashMap<>();
        AtomicInteger dups = new AtomicInteger();
        List<List<Long>> got = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        long end = System.currentTimeMillis() + 30000;
        for (int i = 0; i < n; i++) {
            List<Long> mine = Collections.synchronizedList(new ArrayList<>());
            got.add(mine);
            Thread t = new Thread(() -> {
                try (KafkaShareConsumer<String, String> c = consumer(group, 2)) {
                    c.subscribe(List.of(topic));
                    while (seen.size() < N && System.currentTimeMillis() < end) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            if (seen.put(r.offset(), 1) != null) dups.incrementAndGet();
                            mine.add(r.offset());
                            Thread.sleep(40);  // processing time: the others acquire meanwhile
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                        }
                        c.commitSync();
                    }
                } catch (Exception e) { out("ERROR " + e); }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) t.join();
        boolean all = true;
        for (int i = 0; i < n; i++) { out("TRACE " + group + " consumer" + i + " " + got.get(i)); all &= !got.get(i).isEmpty(); }
        out("RESULT shared" + n + " received=" + seen.size() + " duplicates=" + dups.get() + " every_consumer_got_records=" + all);
    }

    /** A member releases what it got; another member receives those records again. */
    static void release(String topic, String group) throws Exception {
        Set<Long> released = new TreeSet<>();
        try (KafkaShareConsumer<String, String> a = consumer(group, 5)) {
            a.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + 20000;
            while (released.isEmpty() && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : a.poll(Duration.ofMillis(200))) {
                    a.acknowledge(r, AcknowledgeType.RELEASE);
                    released.add(r.offset());
                }
            }
            a.commitSync();
        }
        Map<Long, Short> counts = new TreeMap<>();
        try (KafkaShareConsumer<String, String> b = consumer(group, 10)) {
            b.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + 20000;
            while (counts.size() < N && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : b.poll(Duration.ofMillis(200))) {
                    counts.put(r.offset(), r.deliveryCount().orElse((short) -1));
                    b.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                b.commitSync();
            }
        }
        boolean redelivered = true;
        for (long o : released) redelivered &= counts.getOrDefault(o, (short) 0) == 2;
        out("TRACE " + group + " released " + released + " then other member got " + counts);
        out("RESULT release released=" + released.size() + " redelivered_to_other_with_count_2=" + redelivered
            + " other_received=" + counts.size());
    }

    /** Rejected records are archived: nobody gets them again. */
    static void reject(String topic, String group, Admin admin) throws Exception {
        int rejected = 0, accepted = 0, again = 0;
        try (KafkaShareConsumer<String, String> c = consumer(group, 10)) {
            c.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + 20000;
            while (rejected + accepted < N && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    if (r.offset() % 10 == 0) { c.acknowledge(r, AcknowledgeType.REJECT); rejected++; }
                    else { c.acknowledge(r, AcknowledgeType.ACCEPT); accepted++; }
                }
                c.commitSync();
            }
        }
        try (KafkaShareConsumer<String, String> c = consumer(group, 10)) {
            c.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + 3000;
            while (System.currentTimeMillis() < end) again += c.poll(Duration.ofMillis(200)).count();
        }
        out("RESULT reject rejected=" + rejected + " accepted=" + accepted + " delivered_again=" + again);
    }

    /** The delivery-count limit archives a record released over and over. */
    static void poison(String topic, String group) throws Exception {
        int deliveries = 0, accepted = 0;
        try (KafkaShareConsumer<String, String> c = consumer(group, 10)) {
            c.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + 20000, quiet = 0;
            while (System.currentTimeMillis() < end) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                if (rs.isEmpty() && accepted == N - 1 && (quiet += 200) > 2500) break;
                for (ConsumerRecord<String, String> r : rs) {
                    if (r.value().equals("poison")) { deliveries++; c.acknowledge(r, AcknowledgeType.RELEASE); }
                    else { accepted++; c.acknowledge(r, AcknowledgeType.ACCEPT); }
                }
                c.commitSync();
            }
        }
        out("RESULT poison deliveries=" + deliveries + " accepted=" + accepted);
    }

    /** A consumer is killed (SIGKILL) while it holds records under a 30 s lock; they come back
     *  with delivery count 2 well before the lock expires: the broker releases them when the dead
     *  consumer's connection closes (Kafka's ShareSessionCache disconnect listener). */
    static void kill(String topic, String group, int lockMs) throws Exception {
        String java = System.getProperty("java.home") + "/bin/java";
        Process child = new ProcessBuilder(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
            System.getProperty("java.class.path"), "ShareCheck", boot, "hold", topic, group, "5")
            .redirectErrorStream(true).start();
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(child.getInputStream()));
        String held = null;
        for (String line; (line = in.readLine()) != null; ) if (line.startsWith("HELD ")) { held = line.substring(5); break; }
        child.destroyForcibly().waitFor();
        long killed = System.currentTimeMillis();
        Map<Long, Short> counts = new TreeMap<>();
        long firstHeldBackMs = -1;
        Set<String> heldSet = new HashSet<>(Arrays.asList(held == null ? new String[0] : held.split(",")));
        try (KafkaShareConsumer<String, String> c = consumer(group, 10)) {
            c.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + 30000;
            while (counts.size() < N && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    counts.put(r.offset(), r.deliveryCount().orElse((short) -1));
                    if (heldSet.contains(Long.toString(r.offset())) && firstHeldBackMs < 0)
                        firstHeldBackMs = System.currentTimeMillis() - killed;
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                c.commitSync();
            }
        }
        boolean back = !heldSet.isEmpty();
        for (String o : heldSet) back &= counts.getOrDefault(Long.parseLong(o), (short) 0) == 2;
        out("TRACE " + group + " killed member held " + held + "; back after " + firstHeldBackMs + " ms");
        out("RESULT kill held=" + heldSet.size() + " returned_with_count_2=" + back + " received=" + counts.size()
            + " before_lock=" + (firstHeldBackMs >= 0 && firstHeldBackMs < lockMs / 2));
    }

    static void hold(String topic, String group, int n) throws Exception {
        KafkaShareConsumer<String, String> c = consumer(group, n);
        c.subscribe(List.of(topic));
        while (true) {
            ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
            if (!rs.isEmpty()) {
                StringJoiner j = new StringJoiner(",");
                for (ConsumerRecord<String, String> r : rs) j.add(Long.toString(r.offset()));
                out("HELD " + j);
                Thread.sleep(600000);
            }
        }
    }

    /** Accept n records, print them, and stop without closing (the caller kills the broker). */
    static void take(String topic, String group, int n) throws Exception {
        KafkaShareConsumer<String, String> c = consumer(group, 1);
        c.subscribe(List.of(topic));
        List<String> got = new ArrayList<>();
        long end = System.currentTimeMillis() + 30000;
        while (got.size() < n && System.currentTimeMillis() < end) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                got.add(r.offset() + ":" + r.deliveryCount().orElse((short) -1));
                c.acknowledge(r, AcknowledgeType.ACCEPT);
            }
            c.commitSync();
        }
        out("TOOK " + String.join(",", got));
        Runtime.getRuntime().halt(0);
    }

    public static void main(String[] args) throws Exception {
        boot = args[0];
        String mode = args[1];
        if (mode.equals("hold")) { hold(args[2], args[3], Integer.parseInt(args[4])); return; }
        if (mode.equals("take")) { take(args[2], args[3], Integer.parseInt(args[4])); return; }
        String pre = args[2];
        int lockMs = 2000;
        int killLockMs = 30000;  // the dead member's records must not wait for it
        Properties ap = new Properties();
        ap.put("bootstrap.servers", boot);
        try (Admin admin = Admin.create(ap)) {
            String[] names = {"two", "three", "release", "reject", "poison", "kill"};
            List<NewTopic> topics = new ArrayList<>();
            for (String s : names) topics.add(new NewTopic(pre + s, 1, (short) 1));
            admin.createTopics(topics).all().get();
            for (String s : names) {
                Map<String, String> cfg = new HashMap<>(Map.of("share.auto.offset.reset", "earliest",
                    "share.record.lock.duration.ms", Integer.toString(s.equals("kill") ? killLockMs : lockMs)));
                if (s.equals("poison")) cfg.put("share.delivery.count.limit", "2");
                groupConfig(admin, pre + "g-" + s, cfg);
            }
            for (String s : names) {
                List<String> v = values(N);
                if (s.equals("poison")) v.set(7, "poison");
                produce(pre + s, v);
            }
            atOnce(List.of(
                () -> { shared(pre + "two", pre + "g-two", 2); return null; },
                () -> { shared(pre + "three", pre + "g-three", 3); return null; },
                () -> { release(pre + "release", pre + "g-release"); return null; },
                () -> { reject(pre + "reject", pre + "g-reject", admin); return null; },
                () -> { poison(pre + "poison", pre + "g-poison"); return null; },
                () -> { kill(pre + "kill", pre + "g-kill", killLockMs); return null; }));
        }
        out("DONE");
        System.exit(0);
    }
}

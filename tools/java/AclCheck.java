// The Java client (kafka-clients 4.x) as PLAIN users against a broker with ACLs: what each user
// may do, and the exception the client raises when the broker refuses. Run with the JDK alone:
//
//   java -cp "<kafka-clients 4.x and its dependencies>" tools/java/AclCheck.java HOST:PORT ACTION...
//
// HOST:PORT is a SASL_PLAINTEXT listener with the PLAIN users alice, bob... (password
// "<user>-secret"). Each ACTION is run in order and prints one line "<action> <outcome>", where the
// outcome is "OK <detail>" or the simple class name of the innermost exception:
//   USER:produce:TOPIC          one record, send().get()
//   USER:consume:TOPIC:GROUP    subscribe in GROUP from the earliest offset until a record arrives
//   USER:describe:TOPIC         Admin.describeTopics with includeAuthorizedOperations(true): the
//                               operations (KIP-430), sorted
//   USER:cluster                Admin.describeCluster with includeAuthorizedOperations(true)
// The lines hold no ids, offsets or timings, so two brokers that decide alike print the same.

import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class AclCheck {
    static final int TIMEOUT_S = 20;

    interface Action {
        String run() throws Exception;
    }

    static Properties props(String bootstrap, String user) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "PLAIN");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                + user + "\" password=\"" + user + "-secret\";");
        return p;
    }

    static String sorted(Set<AclOperation> ops) {
        if (ops == null) {
            return "null";
        }
        TreeSet<String> names = new TreeSet<>();
        for (AclOperation op : ops) {
            names.add(op.name());
        }
        return String.join(",", names);
    }

    static String produce(String bootstrap, String user, String topic) throws Exception {
        Properties p = props(bootstrap, user);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, TIMEOUT_S * 1000);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(topic, "java")).get(TIMEOUT_S, TimeUnit.SECONDS);
            return "OK";
        }
    }

    static String consume(String bootstrap, String user, String topic, String group) {
        Properties p = props(bootstrap, user);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(Collections.singletonList(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
            while (System.nanoTime() < deadline) {
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
                if (!records.isEmpty()) {
                    return "OK";
                }
            }
            return "TIMEOUT";
        }
    }

    static String describe(String bootstrap, String user, String topic) throws Exception {
        try (Admin admin = Admin.create(props(bootstrap, user))) {
            TopicDescription d = admin.describeTopics(List.of(topic),
                    new DescribeTopicsOptions().includeAuthorizedOperations(true))
                    .allTopicNames().get(TIMEOUT_S, TimeUnit.SECONDS).get(topic);
            return "OK " + sorted(d.authorizedOperations());
        }
    }

    static String cluster(String bootstrap, String user) throws Exception {
        try (Admin admin = Admin.create(props(bootstrap, user))) {
            return "OK " + sorted(admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true))
                    .authorizedOperations().get(TIMEOUT_S, TimeUnit.SECONDS));
        }
    }

    static String outcome(Action a) {
        try {
            return a.run();
        } catch (Throwable e) {
            Throwable c = e;
            while (c.getCause() != null && c.getCause() != c) {
                c = c.getCause();
            }
            return c.getClass().getSimpleName();
        }
    }

    public static void main(String[] args) {
        String bootstrap = args[0];
        for (int i = 1; i < args.length; i++) {
            String[] a = args[i].split(":");
            String user = a[0];
            String result = switch (a[1]) {
                case "produce" -> outcome(() -> produce(bootstrap, user, a[2]));
                case "consume" -> outcome(() -> consume(bootstrap, user, a[2], a[3]));
                case "describe" -> outcome(() -> describe(bootstrap, user, a[2]));
                case "cluster" -> outcome(() -> cluster(bootstrap, user));
                default -> "unknown action";
            };
            System.out.println(args[i] + " " + result);
            System.out.flush();
        }
    }
}

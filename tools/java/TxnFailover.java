// The Java transactional producer driven step by step from stdin, so that a test can kill brokers
// between its steps (tests/reference/test_kafka_cluster_reference.py: a transaction across a
// coordinator failover, issue 29). Run with the JDK alone:
//
//   java -cp "<kafka-clients and its dependencies>" tools/java/TxnFailover.java BOOTSTRAP TXN_ID TOPIC
//
// It prints "READY" once started, then reads one command a line and answers one line each:
//   init        initTransactions                                   -> "OK init"
//   write TAG   beginTransaction, then the value TAG<p> to partitions 0, 1 and 2 of TOPIC, flushed
//                                                                  -> "OK write TAG"
//   commit      commitTransaction                                  -> "OK commit"
//   abort       abortTransaction                                   -> "OK abort"
//   quit        close the producer and exit
// A step that throws answers "FAIL <step> <exception class>: <message>" (the cause's class too).
// The 4.x client runs transactions v2 (KIP-890 part 2) when the brokers finalize
// transaction.version 2, as Kafka 4.4 and minibroker do.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnFailover {

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[1]);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "180000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "180000");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        String topic = args[2];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props, new StringSerializer(),
                new StringSerializer())) {
            System.out.println("READY");
            System.out.flush();
            for (String line; (line = in.readLine()) != null; ) {
                String[] cmd = line.trim().split(" ");
                if (cmd[0].equals("quit")) {
                    break;
                }
                try {
                    switch (cmd[0]) {
                        case "init" -> p.initTransactions();
                        case "write" -> {
                            p.beginTransaction();
                            for (int part = 0; part < 3; part++) {
                                p.send(new ProducerRecord<>(topic, part, null, cmd[1] + part));
                            }
                            p.flush();
                        }
                        case "commit" -> p.commitTransaction();
                        case "abort" -> p.abortTransaction();
                        default -> throw new IllegalArgumentException("unknown command " + cmd[0]);
                    }
                    System.out.println("OK " + line.trim());
                } catch (Exception e) {
                    Throwable cause = e.getCause();
                    System.out.println("FAIL " + cmd[0] + " " + e.getClass().getName() + ": " + e.getMessage()
                            + (cause != null && cause != e ? " (cause " + cause.getClass().getName() + ")" : ""));
                }
                System.out.flush();
            }
            p.close(Duration.ofSeconds(30));
        }
    }
}

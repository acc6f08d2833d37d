// The Java transactional producer through faults the broker injects (tests/faults/test_faults_java.py):
// InitProducerId answered COORDINATOR_LOAD_IN_PROGRESS and CONCURRENT_TRANSACTIONS, EndTxn answered
// CONCURRENT_TRANSACTIONS, each retried by the client. Run with the JDK alone:
//
//   java -cp "<kafka-clients 4.x and its dependencies>" tools/java/TxnFaultsCheck.java 127.0.0.1:9092 topic txn-id 5 10
//
// Commits <transactions> transactions of <records> records each (values "0".."n-1", in order, to
// partition 0), then prints "OK committed <n>"; any failure prints "FAIL <exception chain>" and exits 1.

import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnFaultsCheck {
    public static void main(String[] args) {
        String bootstrap = args[0], topic = args[1], txnId = args[2];
        int transactions = Integer.parseInt(args[3]), records = Integer.parseInt(args[4]);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "java-txn-faults");
        props.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "20");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        int n = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (int t = 0; t < transactions; t++) {
                producer.beginTransaction();
                for (int i = 0; i < records; i++, n++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, String.valueOf(n)));
                }
                producer.commitTransaction();
            }
            System.out.println("OK committed " + n);
        } catch (Exception e) {
            StringBuilder chain = new StringBuilder();
            for (Throwable c = e; c != null; c = c.getCause()) {
                chain.append(c.getClass().getName()).append(": ").append(c.getMessage()).append(" / ");
            }
            System.out.println("FAIL " + chain);
            System.exit(1);
        }
    }
}

// The Java consumer's read speed, as issue 22 describes it: assign every partition of the topic,
// seek to the beginning, poll with max.poll.records=10000 until COUNT records are in, and start the
// clock at the first record (so connection set-up and metadata are not measured). Prints one JSON
// object. Compiled by bench/javabench.py against the reference jars.
//
//   java -cp classes:libs/* ConsumeBench BOOTSTRAP TOPIC COUNT [key=value ...]
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class ConsumeBench {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        long count = Long.parseLong(args[2]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("max.poll.records", "10000");
        p.put("enable.auto.commit", "false");
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            p.put(kv[0], kv[1]);
        }
        KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p);
        try {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(topic, Duration.ofSeconds(30))) {
                tps.add(new TopicPartition(topic, pi.partition()));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            long got = 0, bytes = 0, t0 = 0, polls = 0;
            long deadline = System.nanoTime() + 300_000_000_000L;
            while (got < count && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(500));
                if (recs.isEmpty()) continue;
                if (t0 == 0) t0 = System.nanoTime();
                polls++;
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    got++;
                    bytes += r.serializedValueSize();
                }
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            if (got < count) {
                System.err.println("consumed only " + got + " of " + count);
                System.exit(1);
            }
            // close() ends the fetch session with a fetch of no partitions: timed too
            long c0 = System.nanoTime();
            c.close();
            c = null;
            double closeMs = (System.nanoTime() - c0) / 1e6;
            System.out.println("{\"seconds\": " + secs + ", \"records\": " + got + ", \"bytes\": " + bytes
                    + ", \"polls\": " + polls + ", \"close_ms\": " + closeMs + "}");
        } finally {
            if (c != null) c.close();
        }
    }
}

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The word count of Kafka Streams' documentation, one instance per JVM.
 *
 * <p>Usage: {@code WordCount <bootstrap> <application.id> <group.protocol> <input> <output> <state.dir>}.
 * Lines of {@code input} are split into words; {@code groupBy(word)} goes through a repartition
 * topic; {@code count()} is a KTable backed by RocksDB and its changelog topic; every update of a
 * count goes to {@code output} (the record cache is off, so each input word yields one update).
 * With exactly_once_v2 a committed output holds, for each word, the counts 1, 2, ..., n once each,
 * even across a crash: what the test checks.
 *
 * <p>Prints {@code STATE <new>} on every state change (the test waits for RUNNING) and runs until
 * its standard input closes, then closes cleanly; kill -9 is the crash.
 */
public final class WordCount {
    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: WordCount <bootstrap> <application.id> <group.protocol> <input> <output> <state.dir>");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args[2]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 1);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        // a lost member is noticed in seconds, not the 45 s default, so the kill -9 test stays short
        props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10000);
        props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1000);

        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, Long> counts = builder
            .stream(args[3], Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"));
        counts.toStream().to(args[4], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("UNCAUGHT " + e);
            System.out.flush();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // the test holds stdin open for as long as this instance should run
                }
            } catch (java.io.IOException ignored) {
                // closed: stop
            }
            done.countDown();
        });
        stdin.setDaemon(true);
        stdin.start();
        streams.start();
        done.await();
        streams.close(Duration.ofSeconds(30));
        System.out.println("CLOSED");
        System.out.flush();
    }
}

/*
 * A Kafka Streams application for the live tests: it joins a streams group (KIP-1071, group.protocol
 * streams) and counts the words of its input topic into its output topic. The count goes through a
 * repartition topic, so that the group's topology has two subtopologies and commits offsets on an
 * internal topic as well as on its input, as real applications do.
 *
 * Usage: CountWords BOOTSTRAP APPLICATION_ID INPUT[,INPUT...] OUTPUT STATE_DIR
 * It prints RUNNING once the application runs (or ERROR if it fails first), and closes (leaving the
 * group) when its stdin closes.
 */

import java.io.IOException;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

public final class CountWords {
    public static void main(String[] args) throws IOException, InterruptedException {
        Properties config = new Properties();
        config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        config.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        config.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        config.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        config.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        config.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        config.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(Arrays.asList(args[2].split(",")), Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .groupBy((key, word) -> word)
            .count()
            .toStream()
            .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));

        CountDownLatch started = new CountDownLatch(1);
        AtomicReference<KafkaStreams.State> reached = new AtomicReference<>();
        try (KafkaStreams streams = new KafkaStreams(builder.build(), config)) {
            streams.setStateListener((now, before) -> {
                if (now == KafkaStreams.State.RUNNING || now == KafkaStreams.State.ERROR) {
                    reached.compareAndSet(null, now);
                    started.countDown();
                }
            });
            streams.start();
            started.await();
            System.out.println(reached.get());
            System.out.flush();
            while (System.in.read() != -1) {
                // the test closes stdin to stop the application
            }
        }
        System.out.println("CLOSED");
    }
}

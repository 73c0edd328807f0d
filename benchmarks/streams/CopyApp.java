import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The latency benchmark's JVM peer: copies every record of one topic to another, unchanged.
 *
 * <p>Arguments: bootstrap input output commitIntervalMs guarantee threads stateDir applicationId
 * (guarantee: exactly_once_v2 or at_least_once). Prints "RUNNING" each time the application
 * reaches that state, so the harness knows it started; SIGTERM closes it.
 */
public final class CopyApp {
    private CopyApp() {}

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 8) {
            System.err.println(
                "usage: CopyApp bootstrap input output commitIntervalMs guarantee threads"
                    + " stateDir applicationId");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Integer.parseInt(args[3]));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[4]);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[5]));
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[6]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[7]);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        builder.<byte[], byte[]>stream(args[1]).to(args[2]);

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                System.out.println("RUNNING");
                System.out.flush();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            closed.countDown();
        }));
        streams.start();
        closed.await();
    }
}

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelConsumerOptions.CommitMode;
import io.confluent.parallelconsumer.ParallelConsumerOptions.ProcessingOrder;
import io.confluent.parallelconsumer.ParallelEoSStreamProcessor;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The concurrency benchmark's JVM peer (issue #50): Confluent's Parallel Consumer with a handler
 * that sleeps, standing in for I/O.
 *
 * <p>Arguments: bootstrap topic groupId concurrency ordering sleepMs records (ordering: KEY,
 * PARTITION or UNORDERED). Consumes until {@code records} handler calls have returned, then
 * prints one JSON line to stdout and exits 0: {@code records}, {@code seconds} (from the start
 * of the first handler call to the end of the last), {@code cpu_seconds} (the whole process, JVM
 * start-up included) and {@code window_cpu_seconds} (process CPU over the same window as
 * {@code seconds}). Exits 1 with a message on stderr if the Parallel Consumer fails or handles
 * no record for {@code -Didle.timeout.s} seconds (default 60), 2 on bad arguments.
 */
public final class ParallelApp {
    private ParallelApp() {}

    /** Process CPU time in ns: every thread of the JVM (workers, broker poller, GC, JIT). */
    private static long cpuNanos() {
        var os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getProcessCpuTime();
        }
        return -1;
    }

    private static void fail(long handled, long target, String why) {
        System.err.println("ParallelApp: failed after " + handled + " of " + target
            + " records: " + why);
        System.exit(1);
    }

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 7) {
            System.err.println(
                "usage: ParallelApp bootstrap topic groupId concurrency KEY|PARTITION|UNORDERED"
                    + " sleepMs records");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        int concurrency;
        ProcessingOrder ordering;
        long sleepMs;
        long target;
        try {
            concurrency = Integer.parseInt(args[3]);
            ordering = ProcessingOrder.valueOf(args[4].toUpperCase(Locale.ROOT));
            sleepMs = Long.parseLong(args[5]);
            target = Long.parseLong(args[6]);
        } catch (IllegalArgumentException e) {
            System.err.println("ParallelApp: bad argument: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (concurrency < 1 || sleepMs < 0 || target < 1) {
            System.err.println("ParallelApp: need concurrency >= 1, sleepMs >= 0, records >= 1");
            System.exit(2);
        }

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // The Parallel Consumer commits itself and refuses a consumer that auto-commits.
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);

        // PERIODIC_CONSUMER_ASYNCHRONOUS, the library's default and the mode its docs call the
        // fastest: at-least-once, offsets committed in the background every commitInterval
        // (5 s, Kafka's auto.commit.interval.ms default). That is what the SDK's at_least_once
        // profile does too (librdkafka's background commit of the stored offsets), so the rows
        // compare the concurrency machinery, not a synchronous commit against an async one.
        // PERIODIC_CONSUMER_SYNC would only narrow the replay window after a crash.
        ParallelConsumerOptions<byte[], byte[]> options =
            ParallelConsumerOptions.<byte[], byte[]>builder()
                .consumer(consumer)
                .ordering(ordering)
                .maxConcurrency(concurrency)
                .commitMode(CommitMode.PERIODIC_CONSUMER_ASYNCHRONOUS)
                .build();
        ParallelEoSStreamProcessor<byte[], byte[]> processor =
            new ParallelEoSStreamProcessor<>(options);

        AtomicLong handled = new AtomicLong();
        AtomicBoolean started = new AtomicBoolean();
        // Wall and CPU ns at the start of the first handler call and at the end of the call
        // that reached the target; guarded by its own monitor (written by worker threads).
        long[] stamps = new long[4];
        CountDownLatch done = new CountDownLatch(1);

        processor.subscribe(List.of(topic));
        processor.poll(context -> {
            if (!started.get()) {
                synchronized (stamps) {
                    if (!started.get()) {
                        stamps[0] = System.nanoTime();
                        stamps[1] = cpuNanos();
                        started.set(true);
                    }
                }
            }
            if (sleepMs > 0) {
                try {
                    Thread.sleep(sleepMs);
                } catch (InterruptedException e) {
                    // Closing interrupts the workers; a record cut short is not counted.
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            // A batch is one record (batchSize defaults to 1), but count what was given.
            if (handled.addAndGet(context.size()) >= target && done.getCount() > 0) {
                synchronized (stamps) {
                    if (done.getCount() > 0) {
                        stamps[2] = System.nanoTime();
                        stamps[3] = cpuNanos();
                        done.countDown();
                    }
                }
            }
        });

        // Wait for the count, watching for a Parallel Consumer that died (a fatal client
        // error) or that makes no progress: a broker it cannot reach or a topic that does not
        // exist are no errors to a Kafka consumer, which would leave this process waiting.
        long idleLimitNs = TimeUnit.SECONDS.toNanos(Long.getLong("idle.timeout.s", 60));
        long seen = 0;
        long lastProgress = System.nanoTime();
        while (!done.await(500, TimeUnit.MILLISECONDS)) {
            if (processor.isClosedOrFailed()) {
                Exception cause = processor.getFailureCause();
                fail(handled.get(), target, cause == null ? "it closed" : cause.toString());
            }
            long now = handled.get();
            if (now != seen) {
                seen = now;
                lastProgress = System.nanoTime();
            } else if (System.nanoTime() - lastProgress > idleLimitNs) {
                fail(now, target, "no record handled in the last "
                    + TimeUnit.NANOSECONDS.toSeconds(idleLimitNs) + " s (is the broker at "
                    + bootstrap + " reachable, does topic " + topic + " hold enough records?)");
            }
        }
        long records;
        double seconds;
        double windowCpu;
        synchronized (stamps) {
            records = handled.get();
            seconds = (stamps[2] - stamps[0]) / 1e9;
            windowCpu = (stamps[3] - stamps[1]) / 1e9;
        }
        double cpuSeconds = cpuNanos() / 1e9;
        System.out.printf(
            Locale.ROOT,
            "{\"records\": %d, \"seconds\": %.6f, \"cpu_seconds\": %.6f,"
                + " \"window_cpu_seconds\": %.6f, \"concurrency\": %d, \"ordering\": \"%s\"}%n",
            records, seconds, cpuSeconds, windowCpu, concurrency, ordering);
        System.out.flush();
        // The records are counted: do not drain what is buffered, just commit and leave.
        processor.closeDontDrainFirst(Duration.ofSeconds(10));
        System.exit(0);
    }
}

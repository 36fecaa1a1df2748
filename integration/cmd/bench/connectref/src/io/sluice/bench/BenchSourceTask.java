package io.sluice.bench;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * Writes the records of BenchSourceConnector. The value of record n is a
 * fixed random text with n stamped over its first 19 bytes, so values are
 * distinct and cost what a generator that copies a template costs. The
 * source offset is the next n, so a restarted task carries on.
 */
public class BenchSourceTask extends SourceTask {
    private static final Map<String, String> PARTITION = Collections.singletonMap("task", "0");
    private static final byte[][] KEYS = new byte[100][];

    static {
        for (int i = 0; i < KEYS.length; i++) {
            KEYS[i] = ("Page_" + i).getBytes(StandardCharsets.UTF_8);
        }
    }

    private String topic;
    private long max;
    private int batch;
    private byte[] template;
    private long next;

    @Override
    public String version() {
        return "1";
    }

    @Override
    public void start(Map<String, String> props) {
        AbstractConfig c = new AbstractConfig(BenchSourceConnector.CONFIG, props);
        topic = c.getString(BenchSourceConnector.TOPIC);
        max = c.getLong(BenchSourceConnector.MAX_RECORDS);
        batch = c.getInt(BenchSourceConnector.BATCH_SIZE);
        template = new byte[c.getInt(BenchSourceConnector.VALUE_SIZE)];
        SplittableRandom r = new SplittableRandom(1);
        for (int i = 0; i < template.length; i++) {
            template[i] = (byte) ('a' + r.nextInt(26));
        }
        Map<String, Object> stored = context.offsetStorageReader().offset(PARTITION);
        if (stored != null && stored.get("next") instanceof Number n) {
            next = n.longValue();
        }
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        if (next >= max) {
            // Done: poll is called in a loop, so wait rather than spin.
            Thread.sleep(100);
            return null;
        }
        int n = (int) Math.min(batch, max - next);
        List<SourceRecord> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++, next++) {
            byte[] value = Arrays.copyOf(template, template.length);
            long v = next;
            for (int d = 18; d >= 0; d--) {
                value[d] = (byte) ('0' + v % 10);
                v /= 10;
            }
            out.add(new SourceRecord(PARTITION, Collections.singletonMap("next", next + 1), topic, null,
                Schema.BYTES_SCHEMA, KEYS[(int) (next % KEYS.length)], Schema.BYTES_SCHEMA, value));
        }
        return out;
    }

    @Override
    public void stop() {
    }
}

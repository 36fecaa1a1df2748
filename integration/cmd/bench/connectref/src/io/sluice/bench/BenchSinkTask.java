package io.sluice.bench;

import java.util.Collection;
import java.util.Map;

import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Counts the records it is put and the puts, and logs both when it stops:
 * the benchmark reads the line to check that every record was put once.
 */
public class BenchSinkTask extends SinkTask {
    private static final Logger log = LoggerFactory.getLogger(BenchSinkTask.class);

    private long records;
    private long puts;

    @Override
    public String version() {
        return "1";
    }

    @Override
    public void start(Map<String, String> props) {
    }

    @Override
    public void put(Collection<SinkRecord> batch) {
        if (batch.isEmpty()) {
            return;
        }
        // What Sluice's NoopSinkTask does: count, and drop the records.
        puts++;
        records += batch.size();
    }

    @Override
    public void stop() {
        log.info("bench sink stopped: records={} puts={}", records, puts);
    }
}

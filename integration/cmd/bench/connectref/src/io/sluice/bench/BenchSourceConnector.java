package io.sluice.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * The source of the Kafka Connect reference benchmarks: the Java
 * counterpart of the datagen connector in raw format, so that Apache Kafka
 * Connect can be timed on the same work as Sluice. One task writes
 * max.records records to topic: a short key and a value of value.size
 * bytes that differs from every other, batch.size records a poll.
 */
public class BenchSourceConnector extends SourceConnector {
    static final String TOPIC = "topic";
    static final String MAX_RECORDS = "max.records";
    static final String VALUE_SIZE = "value.size";
    static final String BATCH_SIZE = "batch.size";

    static final ConfigDef CONFIG = new ConfigDef()
        .define(TOPIC, ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE, ConfigDef.Importance.HIGH,
            "The topic to write to.")
        .define(MAX_RECORDS, ConfigDef.Type.LONG, ConfigDef.NO_DEFAULT_VALUE, ConfigDef.Range.atLeast(0),
            ConfigDef.Importance.HIGH, "How many records to write in all.")
        .define(VALUE_SIZE, ConfigDef.Type.INT, 1024, ConfigDef.Range.atLeast(20),
            ConfigDef.Importance.MEDIUM, "The size of each value in bytes.")
        .define(BATCH_SIZE, ConfigDef.Type.INT, 1000, ConfigDef.Range.atLeast(1),
            ConfigDef.Importance.LOW, "Records returned by one poll.");

    private Map<String, String> props;

    @Override
    public String version() {
        return "1";
    }

    @Override
    public void start(Map<String, String> props) {
        CONFIG.parse(props);
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return BenchSourceTask.class;
    }

    /** One task whatever tasks.max says: the records are one sequence. */
    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>();
        configs.add(props);
        return configs;
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }
}

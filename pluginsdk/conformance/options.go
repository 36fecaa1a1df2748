package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Options say what to exercise. The JSON form (for the command) uses the
// field names in the tags.
type Options struct {
	// Classes maps a class name to the checks to run for it. Classes the
	// binary serves but Classes omits get only the Describe checks.
	Classes map[string]ClassOptions `json:"classes"`
	// CallTimeout bounds each call to the plugin; default 10 s.
	CallTimeout time.Duration `json:"-"`
	// CallTimeoutMs is CallTimeout in the JSON form.
	CallTimeoutMs int `json:"call_timeout_ms,omitempty"`
	// PollTimeout bounds how long the source check polls for its records;
	// default 30 s.
	PollTimeout time.Duration `json:"-"`
	// PollTimeoutMs is PollTimeout in the JSON form.
	PollTimeoutMs int `json:"poll_timeout_ms,omitempty"`
	// Env is extra environment ("K=V") for the plugin process. The process
	// otherwise gets only PATH, SLUICE_LOG_LEVEL and go-plugin's variables,
	// as under the worker.
	Env []string `json:"env,omitempty"`
}

// ClassOptions are the checks for one class.
type ClassOptions struct {
	// ValidConfig is a configuration that validates without errors and with
	// which the connector and its tasks start.
	ValidConfig map[string]string `json:"valid_config"`
	// InvalidConfig must get validation errors; nil skips that check.
	InvalidConfig map[string]string `json:"invalid_config,omitempty"`
	// InvalidKeys are the keys that must carry errors for InvalidConfig;
	// empty means "at least one error somewhere".
	InvalidKeys []string `json:"invalid_keys,omitempty"`
	// SourceRecords is how many records a source task must produce with
	// ValidConfig; 0 skips the source task checks.
	SourceRecords int `json:"source_records,omitempty"`
	// Resume says the source resumes from stored offsets, which a second
	// process then checks.
	Resume bool `json:"resume,omitempty"`
	// SinkRecords are put to a sink task; nil means DefaultSinkRecords.
	SinkRecords []*data.SinkRecord `json:"-"`
	// SinkValues, in the JSON form, are string values put to a sink task on
	// topic "conformance", alternating between partitions 0 and 1.
	SinkValues []string `json:"sink_values,omitempty"`
	// SkipSinkTask skips the sink task checks.
	SkipSinkTask bool `json:"skip_sink_task,omitempty"`
}

func (o *Options) defaults() {
	if o.CallTimeout == 0 {
		o.CallTimeout = time.Duration(o.CallTimeoutMs) * time.Millisecond
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 10 * time.Second
	}
	if o.PollTimeout == 0 {
		o.PollTimeout = time.Duration(o.PollTimeoutMs) * time.Millisecond
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 30 * time.Second
	}
}

// LoadOptions reads Options from a JSON file.
func LoadOptions(path string) (Options, error) {
	var o Options
	b, err := os.ReadFile(path)
	if err != nil {
		return o, fmt.Errorf("read conformance options: %w", err)
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return o, fmt.Errorf("parse conformance options %s: %w", path, err)
	}
	for name, c := range o.Classes {
		if c.SinkRecords == nil && len(c.SinkValues) > 0 {
			c.SinkRecords = StringRecords("conformance", 2, c.SinkValues...)
			o.Classes[name] = c
		}
	}
	return o, nil
}

// StringRecords builds sink records with string values on topic, spread
// round-robin over partitions, with offsets counting from 0 per partition.
func StringRecords(topic string, partitions int, values ...string) []*data.SinkRecord {
	if partitions < 1 {
		partitions = 1
	}
	next := make([]int64, partitions)
	out := make([]*data.SinkRecord, len(values))
	for i, v := range values {
		p := int32(i % partitions)
		out[i] = &data.SinkRecord{
			Record: data.Record{
				Topic: topic, Partition: p,
				KeySchema: data.OptionalStringSchema, Key: fmt.Sprintf("k%d", i),
				ValueSchema: data.StringSchema, Value: v,
				Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)).UTC(),
			},
			Offset:        next[p],
			TimestampType: data.CreateTime,
			OriginalTopic: topic, OriginalPartition: p, OriginalOffset: next[p],
		}
		next[p]++
	}
	return out
}

// DefaultSinkRecords are ten string records over two partitions.
func DefaultSinkRecords() []*data.SinkRecord {
	vals := make([]string, 10)
	for i := range vals {
		vals[i] = fmt.Sprintf("conformance record %d", i)
	}
	return StringRecords("conformance", 2, vals...)
}

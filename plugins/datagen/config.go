package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Datagen settings.
const (
	topicKey      = "kafka.topic"
	quickstartKey = "quickstart"
	formatKey     = "format"
	intervalKey   = "max.interval"
	rateKey       = "records.per.second"
	iterationsKey = "iterations"
	maxRecordsKey = "max.records"
	keyFieldKey   = "key.field"
	recordSizeKey = "record.size"
	seedKey       = "random.seed"
	batchSizeKey  = "batch.size"

	// Set by TaskConfigs, not by users: which share of the work a task has.
	taskIndexKey = "datagen.task.index"
	taskCountKey = "datagen.task.count"
)

// Values of format.
const (
	formatStruct = "struct"
	formatRaw    = "raw"
)

// maxRecordSize bounds record.size well under the plugin contract's message
// limits.
const maxRecordSize = 4 << 20

func datagenDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: topicKey, Type: config.String, Required: true, Importance: config.High,
			Validator: config.NonEmptyString(), Group: "Datagen", OrderInGroup: 1,
			Doc: "Topic the generated records are written to."}).
		Define(config.Key{Name: quickstartKey, Type: config.String, Default: "users", Importance: config.High,
			Validator: config.CaseInsensitiveValidString(quickstartNames()...), Group: "Datagen", OrderInGroup: 2,
			Doc: "Which made-up data set to generate: users, orders or pageviews."}).
		Define(config.Key{Name: formatKey, Type: config.String, Default: formatStruct, Importance: config.Medium,
			Validator: config.CaseInsensitiveValidString(formatStruct, formatRaw), Group: "Datagen", OrderInGroup: 3,
			Doc: "struct: values are Connect structs with a schema, serialized by the worker's converter. " +
				"raw: values (and keys) are JSON bytes the worker writes as they are, skipping the converter."}).
		Define(config.Key{Name: keyFieldKey, Type: config.String, Default: "", Importance: config.Medium,
			Group: "Datagen", OrderInGroup: 4,
			Doc: "Field of the value that also becomes the record key, with its schema (a string or integer field). Empty: no key."}).
		Define(config.Key{Name: recordSizeKey, Type: config.Int, Default: 0, Importance: config.Medium,
			Validator: config.Range(0, maxRecordSize), Group: "Datagen", OrderInGroup: 5,
			Doc: "When positive, a string field named payload is added and sized so that each value takes about this many bytes as schemaless JSON (exactly, with format=raw). 0: no payload."}).
		Define(config.Key{Name: intervalKey, Type: config.Long, Default: int64(0), Importance: config.Medium,
			Validator: config.AtLeast(int64(0)), Group: "Rate", OrderInGroup: 1,
			Doc: "Milliseconds between two records of one task. 0: as fast as possible."}).
		Define(config.Key{Name: rateKey, Type: config.Double, Default: 0.0, Importance: config.Medium,
			Validator: config.AtLeast(0.0), Group: "Rate", OrderInGroup: 2,
			Doc: "Records per second across the connector, split evenly over its tasks. 0: no limit."}).
		Define(config.Key{Name: maxRecordsKey, Type: config.Long, Default: int64(-1), Importance: config.Medium,
			Validator: config.AtLeast(int64(-1)), Group: "Rate", OrderInGroup: 3,
			Doc: "Records each task produces in total, across restarts; then it idles. -1: no limit."}).
		Define(config.Key{Name: iterationsKey, Type: config.Long, Default: int64(-1), Importance: config.Low,
			Validator: config.AtLeast(int64(-1)), Group: "Rate", OrderInGroup: 4,
			Doc: "Synonym of max.records, the name other datagen connectors use."}).
		Define(config.Key{Name: batchSizeKey, Type: config.Int, Default: 1000, Importance: config.Low,
			Validator: config.Range(1, 100000), Group: "Rate", OrderInGroup: 5,
			Doc: "Most records one poll of a task returns."}).
		Define(config.Key{Name: seedKey, Type: config.Long, Default: nil, Importance: config.Low,
			Group: "Datagen", OrderInGroup: 6,
			Doc: "Seed of the generator. Set: the same seed gives the same records (timestamps included, counted from 2024-01-01). Unset: a random seed and current timestamps."})
}

// settings is a parsed configuration.
type settings struct {
	topic      string
	quickstart *quickstart
	raw        bool
	keyField   string
	recordSize int
	interval   time.Duration // max.interval
	rate       float64       // records.per.second, whole connector
	maxRecords int64         // per task; -1 none
	batchSize  int
	seed       int64
	seeded     bool
	taskIndex  int
	taskCount  int
}

// parseSettings parses props and checks the rules between keys.
func parseSettings(props map[string]string) (*settings, error) {
	v, err := datagenDef().Parse(props)
	if err != nil {
		return nil, err
	}
	if errs := crossCheck(v.Get); len(errs) > 0 {
		var all []error
		for _, k := range slices.Sorted(maps.Keys(errs)) {
			all = append(all, errs[k])
		}
		return nil, errors.Join(all...)
	}
	s := &settings{
		topic:      v.String(topicKey),
		quickstart: quickstarts[strings.ToLower(v.String(quickstartKey))],
		raw:        strings.EqualFold(v.String(formatKey), formatRaw),
		keyField:   strings.TrimSpace(v.String(keyFieldKey)),
		recordSize: v.Int(recordSizeKey),
		interval:   time.Duration(v.Long(intervalKey)) * time.Millisecond,
		rate:       v.Double(rateKey),
		maxRecords: max(v.Long(maxRecordsKey), v.Long(iterationsKey)),
		batchSize:  v.Int(batchSizeKey),
		taskCount:  1,
	}
	if !v.IsNull(seedKey) {
		s.seed, s.seeded = v.Long(seedKey), true
	}
	if raw, ok := props[taskIndexKey]; ok {
		if s.taskIndex, err = strconv.Atoi(raw); err != nil || s.taskIndex < 0 {
			return nil, config.Invalid(taskIndexKey, raw, "not a task number")
		}
	}
	if raw, ok := props[taskCountKey]; ok {
		if s.taskCount, err = strconv.Atoi(raw); err != nil || s.taskCount < 1 || s.taskIndex >= s.taskCount {
			return nil, config.Invalid(taskCountKey, raw, "not a task count above "+strconv.Itoa(s.taskIndex))
		}
	}
	return s, nil
}

// crossCheck applies the rules between keys to parsed values (get returns
// nil for a missing or invalid value) and returns errors by key.
func crossCheck(get func(string) any) map[string]error {
	errs := map[string]error{}
	qs, _ := get(quickstartKey).(string)
	q := quickstarts[strings.ToLower(qs)]
	if kf, _ := get(keyFieldKey).(string); strings.TrimSpace(kf) != "" && q != nil {
		kf = strings.TrimSpace(kf)
		f := q.schema.Field(kf)
		switch {
		case f == nil:
			errs[keyFieldKey] = config.Invalid(keyFieldKey, kf, fmt.Sprintf("the %s quickstart has no field %s; it has %s", q.name, kf, strings.Join(q.keyFields(), ", ")))
		case !keyable(f.Schema):
			errs[keyFieldKey] = config.Invalid(keyFieldKey, kf, fmt.Sprintf("field %s is not a string or integer; key fields of %s are %s", kf, q.name, strings.Join(q.keyFields(), ", ")))
		}
	}
	mr, ok1 := get(maxRecordsKey).(int64)
	it, ok2 := get(iterationsKey).(int64)
	if ok1 && ok2 && mr >= 0 && it >= 0 && mr != it {
		msg := fmt.Sprintf("%s and %s are synonyms; set one of them", maxRecordsKey, iterationsKey)
		errs[maxRecordsKey] = config.Invalid(maxRecordsKey, mr, msg)
		errs[iterationsKey] = config.Invalid(iterationsKey, it, msg)
	}
	return errs
}

// keyable reports whether a field can be the key: strings and plain integers.
func keyable(s *data.Schema) bool {
	if s.Name != "" {
		return false // logical types (Timestamp) are not plain integers
	}
	switch s.Type {
	case data.String, data.Int32, data.Int64:
		return true
	}
	return false
}

// validate is Def.Validate plus crossCheck's errors on their keys.
func validate(props map[string]string) []config.ConfigValue {
	vals := datagenDef().Validate(props)
	byName := make(map[string]any, len(vals))
	for _, v := range vals {
		if len(v.Errors) == 0 {
			byName[v.Name] = v.Value
		}
	}
	errs := crossCheck(func(name string) any { return byName[name] })
	for i := range vals {
		if err, ok := errs[vals[i].Name]; ok {
			vals[i].AddError(err.Error())
		}
	}
	return vals
}

// taskConfigs splits the work over n tasks.
func taskConfigs(props map[string]string, n int) []map[string]string {
	out := make([]map[string]string, n)
	for i := range out {
		m := maps.Clone(props)
		m[taskIndexKey] = strconv.Itoa(i)
		m[taskCountKey] = strconv.Itoa(n)
		out[i] = m
	}
	return out
}

// spacing is the time between two records of one task: the larger of
// max.interval and this task's share of records.per.second. 0: unpaced.
func (s *settings) spacing() time.Duration {
	d := s.interval
	if s.rate > 0 {
		if r := time.Duration(float64(time.Second) * float64(s.taskCount) / s.rate); r > d {
			d = r
		}
	}
	return d
}

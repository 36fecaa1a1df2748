package errorhandler

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Connector settings read by ParseSettings (Kafka Connect's ConnectorConfig
// and SinkConnectorConfig names).
const (
	KeyRetryTimeout            = "errors.retry.timeout"
	KeyRetryDelayMax           = "errors.retry.delay.max.ms"
	KeyTolerance               = "errors.tolerance"
	KeyLogEnable               = "errors.log.enable"
	KeyLogIncludeMessages      = "errors.log.include.messages"
	KeyDLQTopicName            = "errors.deadletterqueue.topic.name"
	KeyDLQReplicationFactor    = "errors.deadletterqueue.topic.replication.factor"
	KeyDLQContextHeadersEnable = "errors.deadletterqueue.context.headers.enable"
)

// Defaults, as Kafka Connect's.
const (
	DefaultRetryDelayMax        = 60 * time.Second
	DefaultDLQReplicationFactor = 3
)

// NoRetryTimeout is RetryTimeout for errors.retry.timeout=-1: retry
// without end.
const NoRetryTimeout time.Duration = -1

// Settings are a connector's error handling settings.
type Settings struct {
	// RetryTimeout is how long a retriable failure is retried: 0 not at
	// all, NoRetryTimeout forever (errors.retry.timeout -1, or any
	// negative value).
	RetryTimeout time.Duration
	// RetryDelayMax caps the wait between two attempts.
	RetryDelayMax time.Duration
	// ToleranceAll is errors.tolerance=all: records that fail are skipped.
	ToleranceAll bool
	// LogEnable logs every failure; LogIncludeMessages adds the record.
	LogEnable          bool
	LogIncludeMessages bool
	// DLQTopic is the dead letter queue topic; empty for none.
	DLQTopic string
	// DLQReplicationFactor is used when the worker creates DLQTopic; -1
	// asks for the broker's default.
	DLQReplicationFactor int16
	// DLQContextHeaders adds the __connect.errors.* headers.
	DLQContextHeaders bool
}

// ParseSettings reads the errors.* settings of a connector configuration,
// with Kafka Connect's defaults for those missing. errors.tolerance is read
// without regard to case, as Kafka's ToleranceType reads it (Kafka's
// validator refuses any case but "none" and "all"; which configs to accept
// is the herder's validation, before this).
func ParseSettings(cfg map[string]string) (Settings, error) {
	s := Settings{RetryDelayMax: DefaultRetryDelayMax, DLQReplicationFactor: DefaultDLQReplicationFactor}
	var errs []error
	get := func(key string) (string, bool) {
		v, ok := cfg[key]
		v = strings.TrimSpace(v)
		return v, ok && v != ""
	}
	// millis reads a number of milliseconds; a negative one (Kafka Connect
	// defines both settings without a validator) is negative, and one too
	// large for a Duration (over 292 years) is the longest Duration.
	millis := func(key string, negative time.Duration) (time.Duration, bool) {
		v, ok := get(key)
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: invalid value %q: want an integer", key, v))
			return 0, false
		case n < 0:
			return negative, true
		case n > math.MaxInt64/int64(time.Millisecond):
			return math.MaxInt64, true
		}
		return time.Duration(n) * time.Millisecond, true
	}
	boolean := func(key string) bool {
		v, ok := get(key)
		if !ok {
			return false
		}
		switch strings.ToLower(v) {
		case "true":
			return true
		case "false":
			return false
		}
		errs = append(errs, fmt.Errorf("%s: invalid value %q: want true or false", key, v))
		return false
	}
	// Any negative errors.retry.timeout is forever, as in Kafka Connect,
	// which defines it without a validator; so is one too large for a
	// Duration.
	if d, ok := millis(KeyRetryTimeout, NoRetryTimeout); ok {
		s.RetryTimeout = d
		if d == math.MaxInt64 {
			s.RetryTimeout = NoRetryTimeout
		}
	}
	// A negative errors.retry.delay.max.ms, which validation lets through,
	// is no wait (rather than a task that fails to start).
	if d, ok := millis(KeyRetryDelayMax, 0); ok {
		s.RetryDelayMax = d
	}
	if v, ok := get(KeyTolerance); ok {
		switch strings.ToLower(v) {
		case "none":
		case "all":
			s.ToleranceAll = true
		default:
			errs = append(errs, fmt.Errorf("%s: invalid value %q: want none or all", KeyTolerance, v))
		}
	}
	s.LogEnable = boolean(KeyLogEnable)
	s.LogIncludeMessages = boolean(KeyLogIncludeMessages)
	s.DLQTopic, _ = get(KeyDLQTopicName)
	if v, ok := get(KeyDLQReplicationFactor); ok {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || n == 0 || n < -1 {
			errs = append(errs, fmt.Errorf("%s: invalid value %q: want a replication factor of at least 1, or -1 for the broker's default", KeyDLQReplicationFactor, v))
		} else {
			s.DLQReplicationFactor = int16(n)
		}
	}
	s.DLQContextHeaders = boolean(KeyDLQContextHeadersEnable)
	if err := errors.Join(errs...); err != nil {
		return Settings{}, fmt.Errorf("error handling settings: %w", err)
	}
	return s, nil
}

// Reports says whether failures are reported at all (error log or dead
// letter queue): Kafka Connect gives a sink task an errant record reporter
// only then.
func (s Settings) Reports() bool { return s.LogEnable || s.DLQTopic != "" }

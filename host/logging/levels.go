package logging

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Level is a log level in log4j's spelling, as Kafka Connect's REST API
// reads and writes it.
type Level string

// The levels log4j (and so Kafka Connect) accepts.
const (
	LevelAll   Level = "ALL"
	LevelTrace Level = "TRACE"
	LevelDebug Level = "DEBUG"
	LevelInfo  Level = "INFO"
	LevelWarn  Level = "WARN"
	LevelError Level = "ERROR"
	LevelFatal Level = "FATAL"
	LevelOff   Level = "OFF"
)

// ErrInvalidLevel is returned for a level name log4j would not accept.
var ErrInvalidLevel = errors.New("invalid log level")

// ParseLevel reads a level name, ignoring case and surrounding spaces.
func ParseLevel(s string) (Level, error) {
	l := Level(strings.ToUpper(strings.TrimSpace(s)))
	switch l {
	case LevelAll, LevelTrace, LevelDebug, LevelInfo, LevelWarn, LevelError, LevelFatal, LevelOff:
		return l, nil
	}
	return "", fmt.Errorf("%w %q", ErrInvalidLevel, s)
}

// Hclog is the hclog level that logs what this log4j level logs. hclog has
// no FATAL (fatal lines are errors) and no ALL (trace is its lowest level).
func (l Level) Hclog() hclog.Level {
	switch l {
	case LevelAll, LevelTrace:
		return hclog.Trace
	case LevelDebug:
		return hclog.Debug
	case LevelWarn:
		return hclog.Warn
	case LevelError, LevelFatal:
		return hclog.Error
	case LevelOff:
		return hclog.Off
	default:
		return hclog.Info
	}
}

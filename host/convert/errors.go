package convert

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownClass is returned (wrapped) by New and NewHeader for a class
// name no converter answers to.
var ErrUnknownClass = errors.New("unknown converter class")

// DataError is Kafka Connect's DataException: a value or a byte sequence
// could not be converted. The runtime's error handling (errors.tolerance)
// treats it as a problem with one record, not with the task.
type DataError struct {
	// Msg is worded as Kafka Connect words it where Kafka has a message.
	Msg string
	// Path locates the problem inside the converted value, for example
	// "items[2].id"; it is empty at the top level.
	Path string
	// Err is the underlying cause, if any.
	Err error
}

func (e *DataError) Error() string {
	msg := e.Msg
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Path != "" {
		msg += " (at " + e.Path + ")"
	}
	return msg
}

func (e *DataError) Unwrap() error { return e.Err }

// dataErr builds a DataError from a format.
func dataErr(format string, args ...any) *DataError {
	return &DataError{Msg: fmt.Sprintf(format, args...)}
}

// atField prepends a struct field or map key to the path of a DataError
// while the error unwinds out of nested values.
func atField(err error, name string) error {
	var de *DataError
	if !errors.As(err, &de) {
		return err
	}
	switch {
	case de.Path == "":
		de.Path = name
	case strings.HasPrefix(de.Path, "["):
		de.Path = name + de.Path
	default:
		de.Path = name + "." + de.Path
	}
	return err
}

// atIndex prepends an array index to the path of a DataError.
func atIndex(err error, i int) error {
	var de *DataError
	if !errors.As(err, &de) {
		return err
	}
	seg := fmt.Sprintf("[%d]", i)
	if de.Path == "" || strings.HasPrefix(de.Path, "[") {
		de.Path = seg + de.Path
	} else {
		de.Path = seg + "." + de.Path
	}
	return err
}

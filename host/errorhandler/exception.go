package errorhandler

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/host/convert"
	"github.com/sluice-io/sluice/host/runtime"
	"github.com/sluice-io/sluice/pluginsdk/wire"
	"github.com/sluice-io/sluice/transforms"
)

// Java classes that reports name, as Kafka Connect's do.
const (
	ConnectException   = "org.apache.kafka.connect.errors.ConnectException"
	DataException      = wire.DataExceptionClass
	RetriableException = wire.RetriableExceptionClass
	KafkaException     = "org.apache.kafka.common.KafkaException"
	TimeoutException   = "org.apache.kafka.common.errors.TimeoutException"
	// kafkaRetriable is the base of the Kafka client's retriable errors.
	kafkaRetriable = "org.apache.kafka.common.errors.RetriableException"

	// Executing classes of the stages that run no configured class. Kafka
	// Connect names its WorkerSourceTask for a send the producer refused
	// and SinkTask (the interface, whatever the connector's task) for an
	// errant record report, so the same values appear in
	// __connect.errors.class.name for those who filter on them.
	classTransformation   = "org.apache.kafka.connect.transforms.Transformation"
	classWorkerSourceTask = "org.apache.kafka.connect.runtime.WorkerSourceTask"
	classSinkTask         = "org.apache.kafka.connect.sink.SinkTask"
	classConsumer         = "org.apache.kafka.clients.consumer.KafkaConsumer"
)

// Retriable says whether err is worth another attempt: a plugin's
// RetriableException (ABORTED), a Kafka error the protocol marks
// retriable, or a produce that ran out of time.
func Retriable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Kind == wire.KindRetriable
	}
	var ex *transforms.Exception
	if errors.As(err, &ex) {
		return ex.Class == RetriableException
	}
	if errors.Is(err, kgo.ErrRecordTimeout) || errors.Is(err, kgo.ErrRecordRetries) {
		return true
	}
	return kerr.IsRetriable(err)
}

// exception is what a report says about an error: its Java class, its
// message (the cause's own words, without the stage and record the runtime
// put in front) and a stack trace.
type exception struct {
	class, message, trace string
}

// describe names err as Kafka Connect's error reporting would: class,
// message and stack trace. class, if not empty, is the class the plugin
// named (an errant record's report) and wins over the one derived from err.
func describe(err error, pluginTrace, class string) exception {
	e := exception{class: ConnectException, message: err.Error()}
	var (
		se *transforms.StageError
		tx *transforms.Exception
		de *convert.DataError
		we *wire.Error
		ke *kerr.Error
	)
	switch {
	case errors.As(err, &tx):
		e.class, e.message = tx.Class, tx.Message
	case errors.As(err, &se):
		e.message = se.Err.Error()
	case errors.As(err, &de):
		e.class, e.message = DataException, de.Error()
		if de.Err != nil && de.Path == "" {
			// Kafka's converters throw DataException("<message>: ",
			// cause): the message stops at the colon, the cause is in
			// the stack trace (ours: the whole chain).
			e.message = de.Msg + ": "
		}
	case errors.As(err, &we):
		e.message = we.Message
		if c := we.Kind.ExceptionClass(); c != "" {
			e.class = c
		}
		if pluginTrace == "" {
			pluginTrace = we.Trace
		}
	case errors.As(err, &ke):
		e.class, e.message = KafkaException, ke.Message+": "+ke.Description
		if ke.Retriable {
			e.class = kafkaRetriable
		}
	case errors.Is(err, kgo.ErrRecordTimeout):
		e.class, e.message = TimeoutException, kgo.ErrRecordTimeout.Error()
	default:
		e.message = innermost(err).Error()
	}
	if class != "" {
		e.class = class
	}
	e.trace = pluginTrace
	if e.trace == "" {
		// No stack to show: Java's first line of one (the class and the
		// message, as printStackTrace starts), then the whole chain,
		// where Java would show the cause.
		e.trace = e.class + ": " + e.message
		if full := err.Error(); full != e.message {
			e.trace += "\nCaused by: " + full
		}
	}
	return e
}

// innermost follows single-error wrapping to the cause.
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// executingClass is the class Kafka Connect names for a stage
// (__connect.errors.class.name): the transformation that failed, the
// converter of the stage, Kafka's WorkerSourceTask for a refused send,
// Kafka's SinkTask for an errant record report, the task otherwise.
func (o *Operator) executingClass(stage runtime.Stage, err error) string {
	switch stage {
	case runtime.StageTransformation:
		var se *transforms.StageError
		if errors.As(err, &se) && se.Class != "" {
			return se.Class
		}
		return classTransformation
	case runtime.StageKeyConverter:
		return o.opts.KeyConverterClass
	case runtime.StageValueConverter:
		return o.opts.ValueConverterClass
	case runtime.StageHeaderConverter:
		return o.opts.HeaderConverterClass
	case runtime.StageProduce:
		return classWorkerSourceTask
	case runtime.StagePut:
		return classSinkTask
	case runtime.StageConsume:
		return classConsumer
	}
	return o.opts.TaskClass
}

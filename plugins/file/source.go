package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluice-io/sluice/plugins/internal/version"
	"github.com/sluice-io/sluice/pluginsdk"
	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Source settings, with Kafka's names.
const (
	fileKey      = "file"
	topicKey     = "topic"
	batchSizeKey = "batch.size"

	defaultBatchSize = 2000
)

// Source partition and offset keys, as Kafka's FileStreamSourceTask writes
// them, so offsets stored by either worker mean the same to the other.
const (
	filenameField = "filename"
	positionField = "position"
)

// Timing of a task waiting for input.
const (
	// tailInterval is how often a task at the end of its file looks for
	// appended lines. Kafka's task waits a second; a shorter wait costs a
	// read per interval and takes latency from a second to this.
	tailInterval = 50 * time.Millisecond
	// missingFileRetry is how often a task whose file does not exist yet
	// tries to open it again (Kafka: a second).
	missingFileRetry = time.Second
	// readChunk is how much a task reads from its input at a time.
	readChunk = 64 << 10
)

// singleTopic rejects a comma-separated list: the source writes to one topic,
// and a Kafka topic name cannot contain a comma anyway.
var singleTopic = config.Lambda(func(name string, v any) error {
	if s, ok := v.(string); ok && strings.Contains(s, ",") {
		return config.Invalid(name, v, "the file source writes to a single topic; a list is not accepted")
	}
	return nil
}, "a single topic name")

func sourceDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: fileKey, Type: config.String, Default: nil, Importance: config.High,
			Doc: "Source filename. If not specified, the standard input will be used."}).
		Define(config.Key{Name: topicKey, Type: config.String, Required: true, Importance: config.High,
			Validator: config.All(config.NonEmptyString(), singleTopic),
			Doc:       "The topic to publish data to."}).
		Define(config.Key{Name: batchSizeKey, Type: config.Int, Default: defaultBatchSize, Importance: config.Low,
			Validator: config.AtLeast(1),
			Doc:       "The maximum number of records the source task can read from the file each time it is polled."})
}

// SourceConnector is FileStreamSourceConnector. One file is one stream of
// lines, so it runs a single task whatever tasks.max says.
type SourceConnector struct {
	props map[string]string
}

var (
	_ pluginsdk.SourceConnector      = (*SourceConnector)(nil)
	_ pluginsdk.ExactlyOnceSupporter = (*SourceConnector)(nil)
	_ pluginsdk.OffsetAlterer        = (*SourceConnector)(nil)
)

// Version is Sluice's version.
func (c *SourceConnector) Version() string { return version.Version }

// Config declares file, topic and batch.size.
func (c *SourceConnector) Config() *config.Def { return sourceDef() }

// Start checks the configuration.
func (c *SourceConnector) Start(_ context.Context, _ pluginsdk.ConnectorContext, props map[string]string) error {
	if _, err := sourceDef().Parse(props); err != nil {
		return err
	}
	c.props = maps.Clone(props)
	return nil
}

// TaskConfigs returns one task configuration: one input stream.
func (c *SourceConnector) TaskConfigs(context.Context, int) ([]map[string]string, error) {
	return []map[string]string{maps.Clone(c.props)}, nil
}

// Stop has nothing to release.
func (c *SourceConnector) Stop(context.Context) error { return nil }

// NewTask returns a task reading the configured file.
func (c *SourceConnector) NewTask() pluginsdk.SourceTask { return &SourceTask{} }

// ExactlyOnceSupport is SUPPORTED for a file, which is read again from a
// stored position, and UNSUPPORTED for standard input, which has no
// position to go back to.
func (c *SourceConnector) ExactlyOnceSupport(_ context.Context, props map[string]string) (pluginsdk.ExactlyOnce, error) {
	path := strings.TrimSpace(props[fileKey])
	if path == "" {
		return pluginsdk.ExactlyOnceUnsupported, nil
	}
	// Nor has a named pipe. The answer is for the file as it is now, on
	// this host; one that does not exist yet is taken to be a plain file,
	// Kafka's answer.
	if st, err := os.Stat(path); err == nil && st.Mode()&fs.ModeNamedPipe != 0 {
		return pluginsdk.ExactlyOnceUnsupported, nil
	}
	return pluginsdk.ExactlyOnceSupported, nil
}

// AlterOffsets accepts offsets the task can resume from: positions that are
// non-negative integers, under partitions naming a filename; a reset (nil
// offset) is always accepted, so stale entries can be cleaned up. The checks,
// their order (offset before partition) and their messages are Kafka's. The
// task checks the position against the file when it starts.
func (c *SourceConnector) AlterOffsets(_ context.Context, props map[string]string, offsets []pluginsdk.OffsetChange) (bool, error) {
	if strings.TrimSpace(props[fileKey]) == "" {
		return false, pluginsdk.Invalid("Offsets cannot be modified if the '%s' configuration is unspecified. This is because stdin is used for input and offsets are not tracked.", fileKey)
	}
	for _, o := range offsets {
		if o.Offset == nil {
			continue
		}
		if _, err := positionOf(o.Offset); err != nil {
			return false, err
		}
		if o.Partition == nil {
			return false, pluginsdk.Invalid("Partition objects cannot be null")
		}
		if _, ok := o.Partition[filenameField]; !ok {
			return false, pluginsdk.Invalid("Partition objects should contain the key '%s'", filenameField)
		}
	}
	return true, nil
}

// positionOf reads the position from an offset, with Kafka's messages.
func positionOf(off map[string]any) (int64, error) {
	v, ok := off[positionField]
	if !ok {
		return 0, pluginsdk.Invalid("Offset objects should either be null or contain the key '%s'", positionField)
	}
	pos, ok := wholeNumber(v)
	if !ok {
		return 0, pluginsdk.Invalid("The value for the '%s' key in the offset is expected to be a Long value", positionField)
	}
	if pos < 0 {
		return 0, pluginsdk.Invalid("The value for the '%s' key in the offset should be a non-negative value", positionField)
	}
	return pos, nil
}

// wholeNumber is v as an int64 when it is one of the integer kinds an
// offset map may hold (what Kafka reads as a Long).
func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int:
		return int64(n), true
	}
	return 0, false
}

// storedPosition reads the position to resume from, as Kafka's task does: a
// missing or null position (or offset) starts at 0, one that is not an
// integer fails with Kafka's message.
func storedPosition(off map[string]any) (int64, error) {
	if off[positionField] == nil {
		return 0, nil
	}
	pos, ok := wholeNumber(off[positionField])
	if !ok {
		// Kafka's text, which users grep for.
		n := off[positionField]
		return 0, fmt.Errorf("Offset position is the incorrect type: %v (%T)", n, n)
	}
	if pos < 0 {
		// Kafka would seek nowhere and count positions from below 0.
		return 0, fmt.Errorf("position %d should be a non-negative value", pos)
	}
	return pos, nil
}

// input is where a task's bytes come from.
type input interface {
	// read returns bytes that are ready now without waiting: none when the
	// input has nothing new yet, io.EOF when it never will. The slice is
	// valid until the next call.
	read() ([]byte, error)
	close() error
}

// SourceTask is FileStreamSourceTask: it emits each line of its input as a
// STRING value.
type SourceTask struct {
	topic     string
	batchSize int
	path      string         // "" reads standard input
	partition map[string]any // nil for standard input: no offsets
	start     int64          // stored position to resume from
	log       hclog.Logger

	// stdin replaces os.Stdin in tests.
	stdin io.Reader
	// now replaces time.Now in tests.
	now func() time.Time

	in            input
	eof           bool
	split         lineSplitter
	warnedMissing bool
}

var _ pluginsdk.SourceTask = (*SourceTask)(nil)

// Start reads the configuration and the stored position. The file itself is
// opened by Poll, which waits for a file that does not exist yet, as Kafka's
// task does.
func (t *SourceTask) Start(ctx context.Context, tc pluginsdk.SourceTaskContext, props map[string]string) error {
	cfg, err := sourceDef().Parse(props)
	if err != nil {
		return err
	}
	t.topic = cfg.String(topicKey)
	t.batchSize = cfg.Int(batchSizeKey)
	t.path = strings.TrimSpace(cfg.String(fileKey))
	if t.now == nil {
		t.now = time.Now
	}
	t.log = pluginsdk.Logger().With("file", t.name())
	if t.path == "" {
		r := t.stdin
		if r == nil {
			r = os.Stdin
		}
		t.in = newStreamInput(r)
		return nil
	}
	t.partition = map[string]any{filenameField: t.path}
	off, err := tc.Offset(ctx, t.partition)
	if err != nil {
		return fmt.Errorf("read the stored position of %s: %w", t.path, err)
	}
	if t.start, err = storedPosition(off); err != nil {
		return fmt.Errorf("stored offset of %s: %w", t.path, err)
	}
	t.log.Debug("file source task started", "position", t.start)
	return nil
}

func (t *SourceTask) name() string {
	if t.path == "" {
		return "stdin"
	}
	return t.path
}

// Poll returns up to batch.size lines. At the end of the input it waits for
// more until ctx is done and then returns nothing.
func (t *SourceTask) Poll(ctx context.Context) ([]*data.SourceRecord, error) {
	for {
		wait := tailInterval
		if t.in == nil {
			if err := t.open(); err != nil {
				return nil, err
			}
			if t.in == nil {
				wait = missingFileRetry
			}
		}
		if t.in != nil {
			recs, err := t.readBatch(ctx)
			if err != nil || len(recs) > 0 {
				return recs, err
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, nil
		case <-timer.C:
		}
	}
}

// open opens the file at the stored position. A file that does not exist
// yet leaves t.in nil, with one warning, so Poll tries again later.
func (t *SourceTask) open() error {
	in, err := openFileInput(t.path, t.start)
	if errors.Is(err, fs.ErrNotExist) {
		if !t.warnedMissing {
			t.log.Warn("source file does not exist; waiting for it to be created", "error", err)
			t.warnedMissing = true
		}
		return nil
	}
	if err != nil {
		return err
	}
	t.in = in
	t.split.reset(t.start)
	t.log.Info("reading source file", "position", t.start)
	return nil
}

// readBatch turns what is ready into at most batch.size records. It stops
// reading when ctx is done, after at least one read: a line longer than
// what can be read before Poll's deadline (or input that never pauses)
// would otherwise keep Poll, and so Stop, waiting for its end.
func (t *SourceTask) readBatch(ctx context.Context) ([]*data.SourceRecord, error) {
	var recs []*data.SourceRecord
	ts := t.now()
	take := func() {
		for len(recs) < t.batchSize {
			line, end, ok := t.split.next()
			if !ok {
				return
			}
			recs = append(recs, t.record(line, end, ts))
		}
	}
	take()
	for len(recs) < t.batchSize && !t.eof {
		b, err := t.in.read()
		if errors.Is(err, io.EOF) {
			t.eof = true
			if n := t.split.pending(); n > 0 {
				t.log.Warn("input ended inside a line; its bytes are not emitted", "bytes", n)
			}
			break
		}
		var so *startOver
		if errors.As(err, &so) {
			// Poll opens path again, at its start, once this batch
			// is out. The position of every line emitted so far is
			// in the old file; the new one starts again at 0.
			t.log.Warn(so.why+"; reading it from the start", "position", t.split.pos, "dropped_partial_line_bytes", t.split.pending())
			_ = t.in.close()
			t.in, t.start = nil, 0
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", t.name(), err)
		}
		if len(b) == 0 {
			break
		}
		t.split.feed(b)
		take()
		if ctx.Err() != nil {
			break
		}
	}
	return recs, nil
}

// record builds the record of one line, as Kafka's task does: no key, a
// STRING value, the read time as timestamp.
func (t *SourceTask) record(line []byte, end int64, ts time.Time) *data.SourceRecord {
	// STRING values are text: bytes that are not UTF-8 become U+FFFD, as
	// Kafka's UTF-8 reader makes them.
	s := javaUTF8(line)
	r := &data.SourceRecord{
		Record: data.Record{
			Topic: t.topic, Partition: data.NoPartition,
			ValueSchema: data.StringSchema, Value: s,
			Timestamp: ts,
		},
	}
	if t.partition != nil {
		r.SourcePartition = t.partition
		r.SourceOffset = map[string]any{positionField: end}
	}
	return r
}

// Stop closes the input.
func (t *SourceTask) Stop(context.Context) error {
	if t.in == nil {
		return nil
	}
	if err := t.in.close(); err != nil {
		return fmt.Errorf("close %s: %w", t.name(), err)
	}
	return nil
}

// fileInput reads a regular file that may grow: the end of the file is "no
// more yet", not the end of the input.
type fileInput struct {
	path string
	f    *os.File
	info fs.FileInfo // of f, to tell whether path still names it
	pos  int64       // position of the next read
	// pastEnd is set while a stored position lies past the end of the
	// file, which is waited for (as Kafka does) rather than taken for a
	// truncation.
	pastEnd bool
	buf     []byte
	// beforeStat, when set, runs between finding the end of f and looking
	// at path: tests change the file there.
	beforeStat func()
}

// startOver reports that path no longer holds what the task has read: the
// file was truncated, or replaced by another one, which is read from its
// start.
type startOver struct{ why string }

func (e *startOver) Error() string { return e.why }

// openFileInput opens path and seeks to pos. The error names the path. A
// position past the end of the file is kept, as Kafka keeps it: the task
// reads nothing until the file grows past it. A named pipe is read as
// pipeInput.
func openFileInput(path string, pos int64) (input, error) {
	if st, err := os.Stat(path); err == nil && st.Mode()&fs.ModeNamedPipe != 0 {
		in, err := openPipeInput(path, pos)
		if err != nil {
			return nil, err
		}
		return in, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open source file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("open source file: %w", err)
	}
	if st.IsDir() {
		_ = f.Close()
		return nil, pluginsdk.Invalid("source file %s is a directory", path)
	}
	if pos > 0 {
		if pos > st.Size() {
			pluginsdk.Logger().Warn("stored position is past the end of the source file; was it truncated or replaced? lines are read once the file grows past the position",
				"file", path, "position", pos, "size", st.Size())
		}
		if _, err := f.Seek(pos, io.SeekStart); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("seek source file %s to position %d: %w", path, pos, err)
		}
	}
	return &fileInput{path: path, f: f, info: st, pos: pos, pastEnd: pos > st.Size(), buf: make([]byte, readChunk)}, nil
}

func (in *fileInput) read() ([]byte, error) {
	n, err := in.f.Read(in.buf)
	in.pos += int64(n)
	if n > 0 {
		// An error with the bytes comes again with the next read.
		return in.buf[:n], nil
	}
	if !errors.Is(err, io.EOF) {
		return nil, err
	}
	// The end for now; appended lines come with a later read, unless
	// path no longer leads to them. A deleted file is waited for: its
	// successor is a replacement.
	if in.beforeStat != nil {
		in.beforeStat()
	}
	st, err := os.Stat(in.path)
	if err != nil {
		return nil, nil
	}
	switch {
	case !os.SameFile(st, in.info):
		// What was written to the old file before it was replaced
		// (after the read above found its end) is read first.
		n, err := in.f.Read(in.buf)
		in.pos += int64(n)
		if n > 0 {
			return in.buf[:n], nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, &startOver{why: "source file was replaced"}
	case st.Size() >= in.pos:
		in.pastEnd = false
	case !in.pastEnd:
		return nil, &startOver{why: "source file was truncated"}
	}
	return nil, nil
}

func (in *fileInput) close() error { return in.f.Close() }

// pipeInput reads a named pipe, which is how live input reaches a source
// task (its standard input is /dev/null). The pipe is opened without
// blocking, as opening it for reading would wait for a writer, and a read
// waits at most a moment for data, so Poll keeps to its deadline and Stop
// finds it. Writers may come and go: no writer is "no more yet".
type pipeInput struct {
	f   *os.File
	buf []byte
}

// pipeReadWait is how long a read of a pipe waits for data.
const pipeReadWait = time.Millisecond

func openPipeInput(path string, pos int64) (*pipeInput, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, fmt.Errorf("open source file: %w", err)
	}
	if pos > 0 {
		// Seeking a pipe fails, and skipping that many bytes of what
		// is written next would drop bytes the task never read.
		pluginsdk.Logger().Warn("the source file is a named pipe, which cannot go back to a stored position; reading what is written from now on",
			"file", path, "position", pos)
	}
	return &pipeInput{f: f, buf: make([]byte, readChunk)}, nil
}

func (in *pipeInput) read() ([]byte, error) {
	// A pipe outside Go's poller (macOS keeps FIFOs out of kqueue) takes
	// no deadline; opened non-blocking, its read then returns at once,
	// with EAGAIN when a writer has written nothing yet.
	if err := in.f.SetReadDeadline(time.Now().Add(pipeReadWait)); err != nil && !errors.Is(err, os.ErrNoDeadline) {
		return nil, err
	}
	n, err := in.f.Read(in.buf)
	if n > 0 {
		return in.buf[:n], nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, io.EOF) || wouldBlock(err) {
		// Nothing written yet, or no writer now: a later one brings more.
		return nil, nil
	}
	return nil, err
}

func (in *pipeInput) close() error { return in.f.Close() }

// streamInput reads a stream whose reads block (standard input). A goroutine
// does the blocking reads and hands chunks over, so Poll never blocks past
// its deadline. The goroutine ends at the end of the stream or on close; a
// read of a terminal or pipe cannot be interrupted, so after close the
// goroutine may still wait for that one read to return (at the latest when
// the process exits).
type streamInput struct {
	chunks chan []byte
	done   chan struct{}
	err    error // set before chunks is closed
}

func newStreamInput(r io.Reader) *streamInput {
	in := &streamInput{chunks: make(chan []byte, 4), done: make(chan struct{})}
	go in.run(r)
	return in
}

func (in *streamInput) run(r io.Reader) {
	defer close(in.chunks)
	for {
		buf := make([]byte, readChunk)
		n, err := r.Read(buf)
		if n > 0 {
			select {
			case in.chunks <- buf[:n]:
			case <-in.done:
				return
			}
		}
		if err != nil {
			in.err = err
			return
		}
	}
}

func (in *streamInput) read() ([]byte, error) {
	select {
	case b, ok := <-in.chunks:
		if !ok {
			if in.err == nil || errors.Is(in.err, io.EOF) {
				return nil, io.EOF
			}
			return nil, in.err
		}
		return b, nil
	default:
		return nil, nil
	}
}

func (in *streamInput) close() error {
	select {
	case <-in.done:
	default:
		close(in.done)
	}
	return nil
}

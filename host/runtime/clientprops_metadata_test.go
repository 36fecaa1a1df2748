package runtime

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// metadata.max.age.ms takes any value Kafka's clients take (at least 0):
// below franz-go's default min age (5s) the min age follows it, so the
// client can be created; out of franz-go's range it is clamped.
func TestMetadataMaxAge(t *testing.T) {
	for _, c := range []struct {
		ms           string
		max, minimum time.Duration
	}{
		{"0", 10 * time.Millisecond, 10 * time.Millisecond},
		{"5", 10 * time.Millisecond, 10 * time.Millisecond},
		{"1000", time.Second, time.Second},
		{"5000", 5 * time.Second, 5 * time.Second},
		{"9000", 9 * time.Second, 5 * time.Second},
		{"7200000", time.Hour, 5 * time.Second},
	} {
		for kind, parse := range map[string]func(map[string]string) (ClientSettings, error){
			"consumer": ConsumerOptions, "producer": ProducerOptions, "admin": AdminOptions,
		} {
			s, err := parse(map[string]string{"metadata.max.age.ms": c.ms})
			if err != nil {
				t.Fatalf("%s metadata.max.age.ms=%s: %v", kind, c.ms, err)
			}
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, s.Opts...)...)
			if err != nil {
				t.Fatalf("%s metadata.max.age.ms=%s: new client: %v", kind, c.ms, err)
			}
			checkOpts(t, cl, []optWant{
				{kind + " " + c.ms + " metadata max age", kgo.MetadataMaxAge, c.max},
				{kind + " " + c.ms + " metadata min age", kgo.MetadataMinAge, c.minimum},
			})
			cl.Close()
		}
	}
	if _, err := ConsumerOptions(map[string]string{"metadata.max.age.ms": "-1"}); err == nil {
		t.Error("metadata.max.age.ms=-1 accepted")
	}
}

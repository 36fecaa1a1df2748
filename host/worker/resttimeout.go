package worker

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/host/config"
)

// RESTRequestTimeoutProp sets the REST request timeout in milliseconds (90
// s by default, Kafka Connect's DEFAULT_REST_REQUEST_TIMEOUT_MS). Kafka
// Connect has no property for it (its own tests change it in process); the
// sluice. prefix keeps it out of Kafka's namespace. Integration tests set
// it low so that a request the herder cannot complete (the broker down, a
// blocked plugin) answers its 500 within seconds.
const RESTRequestTimeoutProp = "sluice.rest.request.timeout.ms"

// restTimeout is the REST request timeout: Options.RESTTimeout when set,
// else the property, else 0 (host/rest's default).
func restTimeout(cfg *config.Worker, opt time.Duration) (time.Duration, error) {
	if opt > 0 {
		return opt, nil
	}
	v, ok := cfg.Props[RESTRequestTimeoutProp]
	if !ok {
		return 0, nil
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || ms < 1 {
		return 0, fmt.Errorf("invalid value %q for configuration %s: a number of milliseconds of at least 1 is required", v, RESTRequestTimeoutProp)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

//go:build integration

package distributed

import (
	"os"
	"testing"

	"github.com/sluice-io/sluice/integration/kafkatest"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m, kafkatest.Options{})) }

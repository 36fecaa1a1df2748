//go:build integration

package e2e

import (
	"os"
	"testing"

	"github.com/sluice-io/sluice/integration/kafkatest"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m, kafkatest.Options{})) }

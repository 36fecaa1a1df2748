package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildGo builds the Go main package in dir (a path, e.g. ".") into a
// temporary binary for Run and returns its path, so a Go connector's test
// reads:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.BuildGo(t, "."), conformance.Options{...})
//	}
func BuildGo(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), filepath.Base(mustAbs(t, dir)))
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", dir, err, out)
	}
	return bin
}

func mustAbs(t *testing.T, dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

//go:build integration

package main

import (
	"crypto/sha256"
	"time"
)

// The machine's own speed is not constant: on the development VM a fixed
// piece of CPU work (a SHA-256 of 64 MiB) took from 64 to 241 ms within
// two minutes with nothing else running, and no steal time reported. The
// broker, the baselines and the pipelines all slow down alike in such a
// phase, which is what moves single runs most. hostProbe times a small
// fixed piece of work right before each benchmark, so that a slow round
// can be told apart from a slow pipeline.

// probeData is what hostProbe hashes: 32 MiB, some 30–120 ms of one core.
var probeData = func() []byte {
	b := make([]byte, 32<<20)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}()

// hostProbe returns how long one SHA-256 of probeData took, in ms: lower
// is a faster machine at that moment.
func hostProbe() float64 {
	start := time.Now()
	sha256.Sum256(probeData)
	return float64(time.Since(start).Microseconds()) / 1000
}

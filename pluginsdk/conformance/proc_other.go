//go:build !linux

package conformance

import "os/exec"

func setPdeathsig(*exec.Cmd) {}

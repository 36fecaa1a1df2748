//go:build !linux

package plugin

import "errors"

var errNoProc = errors.New("process memory is only read on Linux")

func setOOMScoreAdj(int) error { return errNoProc }

func residentAnon(int) (int64, error) { return 0, errNoProc }

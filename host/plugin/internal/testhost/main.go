// Command testhost is a minimal worker for host/plugin's orphan test: it
// launches the plugin given as its argument as a task, prints the plugin's
// pid and its socket directory, and waits to be killed.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sluice-io/sluice/host/plugin"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testhost PLUGIN")
		os.Exit(2)
	}
	m, err := plugin.New(plugin.Options{WorkerID: "testhost"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in, err := m.Launch(ctx, plugin.Spec{Path: os.Args[1], Connector: "orphan", Task: 0})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("pid %d\ndir %s\n", in.Pid(), m.SocketDir())
	time.Sleep(time.Hour)
}

package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"time"
)

type loggerLevel struct {
	Level        string `json:"level"`
	LastModified *int64 `json:"last_modified"`
}

func (l loggerLevel) modified() string {
	if l.LastModified == nil {
		return "-"
	}
	return time.UnixMilli(*l.LastModified).UTC().Format(time.RFC3339)
}

func runLoggers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("loggers", stderr, &c)
	scope := fs.String("scope", "worker", "set: worker or cluster")
	pos, err := parse(fs, args, stdout)
	if err != nil {
		return err
	}
	e, err := c.start(ctx, stdout, stderr)
	if err != nil {
		return err
	}
	op := "list"
	if len(pos) > 0 {
		op, pos = pos[0], pos[1:]
	}
	switch op {
	case "list":
		if err := need(pos, 0, "loggers list"); err != nil {
			return err
		}
		var all map[string]loggerLevel
		body, err := e.client.get(e.ctx, "/admin/loggers", nil, &all)
		if err != nil {
			return err
		}
		if e.json {
			return printJSON(e.out, body)
		}
		names := make([]string, 0, len(all))
		for n := range all {
			names = append(names, n)
		}
		sort.Strings(names)
		t := newTable(e.out, "LOGGER", "LEVEL", "LAST MODIFIED")
		for _, n := range names {
			t.row(n, all[n].Level, all[n].modified())
		}
		return t.flush()
	case "get":
		if err := need(pos, 1, "loggers get NAME"); err != nil {
			return err
		}
		var l loggerLevel
		body, err := e.client.get(e.ctx, path("admin", "loggers", pos[0]), nil, &l)
		if err != nil {
			return err
		}
		if e.json {
			return printJSON(e.out, body)
		}
		t := newTable(e.out, "LOGGER", "LEVEL", "LAST MODIFIED")
		t.row(pos[0], l.Level, l.modified())
		return t.flush()
	case "set":
		if err := need(pos, 2, "loggers set NAME LEVEL"); err != nil {
			return err
		}
		q := url.Values{}
		if *scope != "worker" {
			q.Set("scope", *scope)
		}
		status, body, err := e.client.do(e.ctx, http.MethodPut, path("admin", "loggers", pos[0]), q, map[string]string{"level": pos[1]})
		if err != nil {
			return err
		}
		if e.json {
			return printJSON(e.out, body)
		}
		if status == http.StatusNoContent {
			_, err := fmt.Fprintf(e.out, "Set %s to %s across the cluster\n", pos[0], pos[1])
			return err
		}
		var affected []string
		if err := decode(body, &affected); err != nil {
			return err
		}
		fmt.Fprintf(e.out, "Set %s to %s on %d logger(s):\n", pos[0], pos[1], len(affected))
		for _, a := range affected {
			fmt.Fprintf(e.out, "  %s\n", a)
		}
		return nil
	}
	return fmt.Errorf("%w: loggers [list | get NAME | set NAME LEVEL]", errUsage)
}

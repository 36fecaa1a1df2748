package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"

	"github.com/sluice-io/sluice/host/herder"
)

func runPlugins(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("plugins", stderr, &c)
	all := fs.Bool("all", false, "list transforms, predicates and converters too")
	pos, err := parse(fs, args, stdout)
	if err != nil {
		return err
	}
	if err := need(pos, 0, "no arguments"); err != nil {
		return err
	}
	e, err := c.start(ctx, stdout, stderr)
	if err != nil {
		return err
	}
	q := url.Values{}
	if *all {
		q.Set("connectorsOnly", "false")
	}
	var plugins []herder.PluginInfo
	body, err := e.client.get(e.ctx, "/connector-plugins", q, &plugins)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.out, body)
	}
	t := newTable(e.out, "CLASS", "TYPE", "VERSION")
	for _, p := range plugins {
		t.row(p.Class, p.Type, orDash(p.Version))
	}
	return t.flush()
}

// runValidate validates a connector config file against its connector.class
// and exits 1 when the worker finds errors.
func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("validate", stderr, &c)
	var sets settings
	fs.Var(&sets, "c", "setting key=value (repeatable)")
	pos, err := parse(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 1 || (len(pos) == 0 && len(sets) == 0) {
		return fmt.Errorf("%w: validate FILE [-c key=value]...", errUsage)
	}
	e, err := c.start(ctx, stdout, stderr)
	if err != nil {
		return err
	}
	cf, err := readConfig(pos, sets)
	if err != nil {
		return err
	}
	if cf.Name != "" {
		if _, ok := cf.Config["name"]; !ok {
			cf.Config["name"] = cf.Name
		}
	}
	class := cf.Config["connector.class"]
	if class == "" {
		return fmt.Errorf("%w: the config has no connector.class", errUsage)
	}
	_, body, err := e.client.do(e.ctx, http.MethodPut, path("connector-plugins", class, "config", "validate"), nil, cf.Config)
	if err != nil {
		return err
	}
	var res herder.ConfigInfos
	if err := decode(body, &res); err != nil {
		return err
	}
	if e.json {
		if err := printJSON(e.out, body); err != nil {
			return err
		}
	} else if err := printValidation(e.out, &res); err != nil {
		return err
	}
	if res.ErrorCount > 0 {
		return errFound
	}
	return nil
}

func printValidation(w io.Writer, res *herder.ConfigInfos) error {
	if res.ErrorCount == 0 {
		_, err := fmt.Fprintf(w, "%s: the configuration is valid\n", res.Name)
		return err
	}
	fmt.Fprintf(w, "%s: %d error(s)\n\n", res.Name, res.ErrorCount)
	type row struct{ key, err string }
	var rows []row
	for _, ci := range res.Configs {
		if ci.Value == nil {
			continue
		}
		for _, e := range ci.Value.Errors {
			rows = append(rows, row{ci.Value.Name, e})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].key < rows[j].key })
	t := newTable(w, "KEY", "ERROR")
	for _, r := range rows {
		t.row(r.key, r.err)
	}
	return t.flush()
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-io/sluice/host/config"
	"github.com/sluice-io/sluice/host/herder"
)

func runConnectors(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: connectors needs a subcommand: list, get, create, update, delete, pause, resume, stop, restart, status, offsets", errUsage)
	}
	sub, args := args[0], args[1:]
	if sub == "help" || sub == "-h" || sub == "--help" {
		fmt.Fprint(stdout, usage)
		return nil
	}
	var c common
	fs := newFlags("connectors "+sub, stderr, &c)
	var (
		expand                   list
		sets                     settings
		unset                    list
		name, initial            string
		includeTasks, onlyFailed bool
		task                     = -1
	)
	switch sub {
	case "list":
		fs.Var(&expand, "expand", "add status or info to each connector (repeatable)")
	case "create":
		fs.Var(&sets, "c", "setting key=value (repeatable)")
		fs.StringVar(&name, "name", "", "connector name (else the name in FILE or -c name=)")
		fs.StringVar(&initial, "initial-state", "", "RUNNING, PAUSED or STOPPED")
	case "update":
		fs.Var(&sets, "c", "setting key=value (repeatable)")
		fs.Var(&unset, "unset", "remove a setting (repeatable; PATCH)")
	case "restart":
		fs.BoolVar(&includeTasks, "include-tasks", false, "restart the tasks too")
		fs.BoolVar(&onlyFailed, "only-failed", false, "restart only failed instances")
		fs.IntVar(&task, "task", -1, "restart only this task")
	case "get", "status", "delete", "pause", "resume", "stop", "offsets":
	default:
		return fmt.Errorf("%w: unknown connectors subcommand %q", errUsage, sub)
	}
	pos, err := parse(fs, args, stdout)
	if err != nil {
		return err
	}
	e, err := c.start(ctx, stdout, stderr)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		if err := need(pos, 0, "no arguments"); err != nil {
			return err
		}
		return e.list(expand)
	case "create":
		if len(pos) > 1 {
			return fmt.Errorf("%w: create takes at most one FILE", errUsage)
		}
		return e.create(pos, sets, name, initial)
	case "update":
		if len(pos) < 1 || len(pos) > 2 {
			return fmt.Errorf("%w: update NAME [FILE]", errUsage)
		}
		return e.update(pos[0], pos[1:], sets, unset)
	case "offsets":
		return e.offsets(pos)
	}
	if err := need(pos, 1, "NAME"); err != nil {
		return err
	}
	n := pos[0]
	switch sub {
	case "get":
		return e.get(n)
	case "status":
		return e.status(n)
	case "delete":
		return e.simple(http.MethodDelete, path("connectors", n), "Deleted connector "+n)
	case "pause":
		return e.simple(http.MethodPut, path("connectors", n, "pause"), "Pausing connector "+n)
	case "resume":
		return e.simple(http.MethodPut, path("connectors", n, "resume"), "Resuming connector "+n)
	case "stop":
		return e.simple(http.MethodPut, path("connectors", n, "stop"), "Stopped connector "+n)
	case "restart":
		return e.restart(n, includeTasks, onlyFailed, task)
	}
	return nil
}

// simple sends a request without a body and says what happened.
func (e *env) simple(method, p, done string) error {
	_, body, err := e.client.do(e.ctx, method, p, nil, nil)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.out, body)
	}
	_, err = fmt.Fprintln(e.out, done)
	return err
}

type expanded struct {
	Status *herder.ConnectorStateInfo `json:"status"`
	Info   *herder.ConnectorInfo      `json:"info"`
}

func (e *env) list(expand list) error {
	if e.json {
		q := url.Values{}
		for _, x := range expand {
			q.Add("expand", x)
		}
		body, err := e.client.get(e.ctx, "/connectors", q, nil)
		if err != nil {
			return err
		}
		return printJSON(e.out, body)
	}
	var all map[string]expanded
	if _, err := e.client.get(e.ctx, "/connectors", url.Values{"expand": {"status", "info"}}, &all); err != nil {
		return err
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	t := newTable(e.out, "NAME", "TYPE", "STATE", "TASKS", "CLASS")
	for _, n := range names {
		x := all[n]
		typ, state, tasks, class := "-", "-", "-", "-"
		if x.Info != nil {
			typ, class = x.Info.Type, orDash(x.Info.Config["connector.class"])
		}
		if x.Status != nil {
			state, tasks = x.Status.Connector.State, taskSummary(x.Status.Tasks)
		}
		t.row(n, typ, state, tasks, class)
	}
	return t.flush()
}

// taskSummary counts tasks by state: "2 RUNNING, 1 FAILED".
func taskSummary(tasks []herder.TaskState) string {
	if len(tasks) == 0 {
		return "0"
	}
	counts := map[string]int{}
	var order []string
	for _, t := range tasks {
		if counts[t.State] == 0 {
			order = append(order, t.State)
		}
		counts[t.State]++
	}
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[s], s)
	}
	return strings.Join(parts, ", ")
}

func (e *env) get(name string) error {
	var info herder.ConnectorInfo
	body, err := e.client.get(e.ctx, path("connectors", name), nil, &info)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.out, body)
	}
	return printInfo(e.out, &info)
}

func printInfo(w io.Writer, info *herder.ConnectorInfo) error {
	fmt.Fprintf(w, "Name:  %s\nType:  %s\nTasks: %d\n\n", info.Name, info.Type, len(info.Tasks))
	keys := make([]string, 0, len(info.Config))
	for k := range info.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t := newTable(w, "KEY", "VALUE")
	for _, k := range keys {
		t.row(k, info.Config[k])
	}
	return t.flush()
}

func (e *env) status(name string) error {
	var st herder.ConnectorStateInfo
	body, err := e.client.get(e.ctx, path("connectors", name, "status"), nil, &st)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.out, body)
	}
	return printStatus(e.out, &st)
}

func printStatus(w io.Writer, st *herder.ConnectorStateInfo) error {
	t := newTable(w, "INSTANCE", "STATE", "WORKER", "TRACE")
	t.row(st.Name+" ("+st.Type+")", st.Connector.State, st.Connector.WorkerID, orDash(firstLine(st.Connector.Trace)))
	for _, task := range st.Tasks {
		t.row(fmt.Sprintf("  task %d", task.ID), task.State, task.WorkerID, orDash(firstLine(task.Trace)))
	}
	return t.flush()
}

// readConfig reads FILE (if given) and applies -c settings on top.
func readConfig(files []string, sets settings) (*config.ConnectorFile, error) {
	cf := &config.ConnectorFile{Config: map[string]string{}}
	if len(files) == 1 {
		raw, err := os.ReadFile(files[0])
		if err != nil {
			return nil, err
		}
		// The name may come later, from -c or --name. The file is decoded
		// (UTF-16, ISO-8859-1) as the worker decodes it.
		parsed, err := config.ParseConnectorSettings(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", files[0], err)
		}
		cf = parsed
	}
	sets.apply(cf.Config)
	return cf, nil
}

func (e *env) create(files []string, sets settings, name, initial string) error {
	cf, err := readConfig(files, sets)
	if err != nil {
		return err
	}
	switch {
	case name != "":
	case cf.Name != "":
		name = cf.Name
	default:
		name = cf.Config["name"]
	}
	if name == "" {
		return fmt.Errorf("%w: no connector name: give --name, -c name=..., or a name in FILE", errUsage)
	}
	// The worker would call a second name a mismatch with "the URL",
	// which the user never wrote: say which names differ.
	for _, other := range []string{cf.Name, cf.Config["name"]} {
		if other != "" && other != name {
			return fmt.Errorf("%w: the connector is named both %q and %q (by --name, FILE or -c name=)", errUsage, name, other)
		}
	}
	if initial == "" {
		initial = cf.InitialState
	}
	req := map[string]any{"name": name, "config": cf.Config}
	if initial != "" {
		req["initial_state"] = strings.ToUpper(initial)
	}
	_, body, err := e.client.do(e.ctx, http.MethodPost, "/connectors", nil, req)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.out, body)
	}
	var info herder.ConnectorInfo
	if err := decode(body, &info); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "Created connector %s\n\n", info.Name)
	return printInfo(e.out, &info)
}

// update replaces the config (PUT) when FILE is given, else changes the
// -c and --unset keys only (PATCH).
func (e *env) update(name string, files []string, sets settings, unset list) error {
	var status int
	var body []byte
	var err error
	if len(files) == 1 {
		if len(unset) > 0 {
			return fmt.Errorf("%w: --unset works without FILE only (a FILE replaces the whole config)", errUsage)
		}
		cf, rerr := readConfig(files, sets)
		if rerr != nil {
			return rerr
		}
		if cf.Name != "" && cf.Name != name {
			return fmt.Errorf("%w: FILE is for connector %q, not %q", errUsage, cf.Name, name)
		}
		status, body, err = e.client.do(e.ctx, http.MethodPut, path("connectors", name, "config"), nil, cf.Config)
	} else {
		if len(sets) == 0 && len(unset) == 0 {
			return fmt.Errorf("%w: update needs FILE, -c key=value or --unset key", errUsage)
		}
		patch := map[string]*string{}
		for _, kv := range sets {
			k, v, _ := strings.Cut(kv, "=")
			patch[strings.TrimSpace(k)] = &v
		}
		for _, k := range unset {
			patch[k] = nil
		}
		status, body, err = e.client.do(e.ctx, http.MethodPatch, path("connectors", name, "config"), nil, patch)
	}
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.out, body)
	}
	var info herder.ConnectorInfo
	if err := decode(body, &info); err != nil {
		return err
	}
	verb := "Updated"
	if status == http.StatusCreated {
		verb = "Created"
	}
	fmt.Fprintf(e.out, "%s connector %s\n\n", verb, info.Name)
	return printInfo(e.out, &info)
}

// restart restarts one task (--task), the connector instance alone (204),
// or, with --include-tasks or --only-failed, what KIP-745's plan says.
func (e *env) restart(name string, includeTasks, onlyFailed bool, task int) error {
	if task >= 0 {
		if includeTasks || onlyFailed {
			return fmt.Errorf("%w: --task restarts one task; --include-tasks and --only-failed are for the connector", errUsage)
		}
		return e.simple(http.MethodPost, path("connectors", name, "tasks", strconv.Itoa(task), "restart"),
			fmt.Sprintf("Restarted task %d of connector %s", task, name))
	}
	q := url.Values{}
	if includeTasks {
		q.Set("includeTasks", "true")
	}
	if onlyFailed {
		q.Set("onlyFailed", "true")
	}
	status, body, err := e.client.do(e.ctx, http.MethodPost, path("connectors", name, "restart"), q, nil)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.out, body)
	}
	if status == http.StatusNoContent {
		_, err := fmt.Fprintf(e.out, "Restarted connector %s\n", name)
		return err
	}
	var plan herder.ConnectorStateInfo
	if err := decode(body, &plan); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "Restart of %s accepted; instances marked RESTARTING will restart:\n\n", name)
	return printStatus(e.out, &plan)
}

// offsets reads (get, the default), alters (alter FILE, KIP-875's PATCH
// body) or resets the connector's offsets.
func (e *env) offsets(pos []string) error {
	if len(pos) < 1 {
		return fmt.Errorf("%w: offsets NAME [get | alter FILE | reset]", errUsage)
	}
	name, op := pos[0], "get"
	if len(pos) > 1 {
		op = pos[1]
	}
	p := path("connectors", name, "offsets")
	switch {
	case op == "get" && len(pos) <= 2:
		var offs herder.ConnectorOffsets
		body, err := e.client.get(e.ctx, p, nil, &offs)
		if err != nil {
			return err
		}
		if e.json {
			return printJSON(e.out, body)
		}
		t := newTable(e.out, "PARTITION", "OFFSET")
		for _, o := range offs.Offsets {
			t.row(compact(o.Partition), compact(o.Offset))
		}
		return t.flush()
	case op == "alter" && len(pos) == 3:
		raw, err := os.ReadFile(pos[2])
		if err != nil {
			return err
		}
		// Decoded as the worker decodes a JSON connector file.
		text, err := config.DecodeJSONText(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", pos[2], err)
		}
		var body json.RawMessage
		if err := json.Unmarshal(text, &body); err != nil {
			return fmt.Errorf("%s: not JSON: %w", pos[2], err)
		}
		return e.message(http.MethodPatch, p, body)
	case op == "reset" && len(pos) == 2:
		return e.message(http.MethodDelete, p, nil)
	}
	return fmt.Errorf("%w: offsets NAME [get | alter FILE | reset]", errUsage)
}

// message sends a request answered with Kafka's {"message"} and prints it.
func (e *env) message(method, p string, body any) error {
	_, b, err := e.client.do(e.ctx, method, p, nil, body)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.out, b)
	}
	var m struct {
		Message string `json:"message"`
	}
	if err := decode(b, &m); err != nil {
		return err
	}
	_, err = fmt.Fprintln(e.out, m.Message)
	return err
}

package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/sluice-io/sluice/host/herder"
)

func (s *Server) listConnectors(c echo.Context) error {
	expand := c.QueryParams()["expand"]
	if len(expand) == 0 {
		names, err := call(s, c, s.h.Connectors)
		if err != nil {
			return err
		}
		if names == nil {
			names = []string{}
		}
		return writeJSON(c, http.StatusOK, names)
	}
	// One deadline for the whole expansion. A connector deleted while we
	// look it up is left out, as Kafka does; unknown expansions are ignored
	// (the connector then maps to {}).
	out, err := call(s, c, func(ctx context.Context) (map[string]map[string]any, error) {
		names, err := s.h.Connectors(ctx)
		if err != nil {
			return nil, err
		}
		out := make(map[string]map[string]any, len(names))
	next:
		for _, name := range names {
			m := map[string]any{}
			for _, x := range expand {
				var v any
				var err error
				switch x {
				case "status":
					v, err = s.h.ConnectorStatus(ctx, name)
				case "info":
					v, err = s.h.ConnectorInfo(ctx, name)
				default:
					continue
				}
				if errors.Is(err, herder.ErrNotFound) {
					continue next
				}
				if err != nil {
					return nil, err
				}
				m[x] = v
			}
			out[name] = m
		}
		return out, nil
	})
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, out)
}

// checkName applies Kafka's rule for a config's "name": when present it
// must equal the connector's name, when absent it is inserted.
func checkName(name string, config map[string]string) error {
	if v, ok := config["name"]; ok {
		if v != name {
			return badRequest("Connector name configuration (%s) doesn't match connector name in the URL (%s)", v, name)
		}
		return nil
	}
	config["name"] = name
	return nil
}

// location is the absolute URL of a connector, for 201 answers (JAX-RS
// resolves Kafka's relative Location against the request's base URI).
func location(c echo.Context, name string) string {
	scheme := "http"
	if c.Request().TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.Request().Host + "/connectors/" + url.PathEscape(name)
}

func (s *Server) createConnector(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	req, err := decodeCreate(body)
	if err != nil {
		return err
	}
	if err := checkName(req.name, req.config); err != nil {
		return err
	}
	if len(req.nulls) > 0 {
		return s.refuseNulls(c, req.config, req.nulls)
	}
	info, err := call(s, c, func(ctx context.Context) (*herder.ConnectorInfo, error) {
		info, _, err := s.h.PutConnectorConfig(ctx, req.name, req.config, false, req.initial)
		return info, err
	})
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, location(c, req.name))
	return writeInfo(c, http.StatusCreated, info)
}

// nullValue is Kafka's validation error for a setting given as null.
const nullValue = "Null value can not be supplied as the configuration value."

// refuseNulls answers a create or PUT whose config has null values as
// Kafka does: the config is invalid, with the errors validation finds
// (cfg, without the nulls) and one for each null.
func (s *Server) refuseNulls(c echo.Context, cfg map[string]string, nulls []string) error {
	infos, err := s.validate(c, cfg, nulls)
	if err != nil {
		return err
	}
	return herder.ConfigErrors(infos)
}

// validate is the herder's validation of cfg, with the error of each key
// in nulls (given as null) added.
func (s *Server) validate(c echo.Context, cfg map[string]string, nulls []string) (*herder.ConfigInfos, error) {
	infos, err := call(s, c, func(ctx context.Context) (*herder.ConfigInfos, error) {
		return s.h.ValidateConfig(ctx, cfg)
	})
	if err != nil {
		return nil, err
	}
	if infos == nil {
		return nil, errors.New("the herder returned no validation result")
	}
	return withNullErrors(infos, nulls), nil
}

// withNullErrors adds to a validation answer the error of each setting
// given as null, as Kafka's AbstractHerder.addNullValuedErrors does: on
// its entry, shown with a null value, or on a new entry without a
// definition, listed first as undefined names are.
func withNullErrors(infos *herder.ConfigInfos, nulls []string) *herder.ConfigInfos {
	var undefined []herder.ConfigInfo
	for _, k := range nulls {
		i := slices.IndexFunc(infos.Configs, func(ci herder.ConfigInfo) bool {
			if ci.Definition != nil {
				return ci.Definition.Name == k
			}
			return ci.Value != nil && ci.Value.Name == k
		})
		infos.ErrorCount++
		if i < 0 {
			undefined = append(undefined, herder.ConfigInfo{Value: &herder.ConfigValueInfo{
				Name: k, RecommendedValues: []string{}, Errors: []string{nullValue}, Visible: true}})
			continue
		}
		ci := &infos.Configs[i]
		if ci.Value == nil {
			ci.Value = &herder.ConfigValueInfo{Name: k, RecommendedValues: []string{}, Visible: true}
		}
		ci.Value.Value = nil
		ci.Value.Errors = append(ci.Value.Errors, nullValue)
	}
	infos.Configs = append(undefined, infos.Configs...)
	return infos
}

func writeInfo(c echo.Context, status int, info *herder.ConnectorInfo) error {
	if info == nil {
		return errors.New("the herder returned no connector info")
	}
	return writeJSON(c, status, info)
}

func (s *Server) getConnector(c echo.Context) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	info, err := call(s, c, func(ctx context.Context) (*herder.ConnectorInfo, error) {
		return s.h.ConnectorInfo(ctx, name)
	})
	if err != nil {
		return err
	}
	return writeInfo(c, http.StatusOK, info)
}

func (s *Server) deleteConnector(c echo.Context) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	if err := call0(s, c, func(ctx context.Context) error { return s.h.DeleteConnector(ctx, name) }); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) getConfig(c echo.Context) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	cfg, err := call(s, c, func(ctx context.Context) (map[string]string, error) {
		return s.h.ConnectorConfig(ctx, name)
	})
	if err != nil {
		return err
	}
	if cfg == nil {
		cfg = map[string]string{}
	}
	return writeJSON(c, http.StatusOK, cfg)
}

func (s *Server) putConfig(c echo.Context) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	cfg, nulls, err := decodeConfig(body)
	if err != nil {
		return err
	}
	if err := checkName(name, cfg); err != nil {
		return err
	}
	if len(nulls) > 0 {
		return s.refuseNulls(c, cfg, nulls)
	}
	type put struct {
		info    *herder.ConnectorInfo
		created bool
	}
	r, err := call(s, c, func(ctx context.Context) (put, error) {
		info, created, err := s.h.PutConnectorConfig(ctx, name, cfg, true, herder.TargetStarted)
		return put{info, created}, err
	})
	if err != nil {
		return err
	}
	if r.created {
		c.Response().Header().Set(echo.HeaderLocation, location(c, name))
		return writeInfo(c, http.StatusCreated, r.info)
	}
	return writeInfo(c, http.StatusOK, r.info)
}

func (s *Server) patchConfig(c echo.Context) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	patch, err := decodePatch(body)
	if err != nil {
		return err
	}
	if v := patch["name"]; v != nil && *v != name {
		return badRequest("Connector name configuration (%s) doesn't match connector name in the URL (%s)", *v, name)
	}
	info, err := call(s, c, func(ctx context.Context) (*herder.ConnectorInfo, error) {
		return s.h.PatchConnectorConfig(ctx, name, patch)
	})
	if err != nil {
		return err
	}
	return writeInfo(c, http.StatusOK, info)
}

func (s *Server) connectorStatus(c echo.Context) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	st, err := call(s, c, func(ctx context.Context) (*herder.ConnectorStateInfo, error) {
		return s.h.ConnectorStatus(ctx, name)
	})
	if err != nil {
		return err
	}
	if st == nil {
		return errors.New("the herder returned no connector status")
	}
	return writeJSON(c, http.StatusOK, st)
}

func (s *Server) taskConfigs(c echo.Context) error {
	tasks, err := s.fetchTaskConfigs(c)
	if err != nil {
		return err
	}
	if tasks == nil {
		tasks = []herder.TaskInfo{}
	}
	return writeJSON(c, http.StatusOK, tasks)
}

// tasksConfig answers the deprecated GET /connectors/{c}/tasks-config:
// {"<c>-<n>": {task config}, ...}.
func (s *Server) tasksConfig(c echo.Context) error {
	tasks, err := s.fetchTaskConfigs(c)
	if err != nil {
		return err
	}
	out := make(map[string]map[string]string, len(tasks))
	for _, t := range tasks {
		out[t.ID.String()] = t.Config
	}
	return writeJSON(c, http.StatusOK, out)
}

// fetchTaskConfigs asks the herder for the task configs of {connector}.
func (s *Server) fetchTaskConfigs(c echo.Context) ([]herder.TaskInfo, error) {
	name, err := param(c, "connector")
	if err != nil {
		return nil, err
	}
	return call(s, c, func(ctx context.Context) ([]herder.TaskInfo, error) {
		return s.h.TaskConfigs(ctx, name)
	})
}

// taskID reads {connector} and {task}; a task that is not an integer is an
// unknown route to Jersey, hence 404.
func taskID(c echo.Context) (herder.TaskID, error) {
	name, err := param(c, "connector")
	if err != nil {
		return herder.TaskID{}, err
	}
	t, err := param(c, "task")
	if err != nil {
		return herder.TaskID{}, err
	}
	n, err := strconv.ParseInt(t, 10, 32)
	if err != nil {
		return herder.TaskID{}, errRouteNotFound
	}
	return herder.TaskID{Connector: name, Task: int(n)}, nil
}

func (s *Server) taskStatus(c echo.Context) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	st, err := call(s, c, func(ctx context.Context) (*herder.TaskState, error) {
		return s.h.TaskStatus(ctx, id)
	})
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("the herder returned no status for task %s", id)
	}
	return writeJSON(c, http.StatusOK, st)
}

func (s *Server) restartTask(c echo.Context) error {
	id, err := taskID(c)
	if err != nil {
		return err
	}
	if err := call0(s, c, func(ctx context.Context) error { return s.h.RestartTask(ctx, id) }); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// queryBool reads a boolean query parameter as Jersey converts one: the
// first value, when blank once trimmed as Java trims (or absent), is def;
// otherwise "true" in any case, untrimmed, is true and anything else false.
func queryBool(c echo.Context, name string, def bool) bool {
	v, ok := c.QueryParams()[name]
	if !ok || len(v) == 0 || javaTrim(v[0]) == "" {
		return def
	}
	return strings.EqualFold(v[0], "true")
}

// restartConnector is KIP-745: without includeTasks and onlyFailed the
// connector instance alone restarts (204); otherwise the answer is the
// restart plan (202).
func (s *Server) restartConnector(c echo.Context) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	includeTasks := queryBool(c, "includeTasks", false)
	onlyFailed := queryBool(c, "onlyFailed", false)
	plan, err := call(s, c, func(ctx context.Context) (*herder.ConnectorStateInfo, error) {
		return s.h.RestartConnector(ctx, name, includeTasks, onlyFailed)
	})
	if err != nil {
		return err
	}
	if !includeTasks && !onlyFailed {
		return c.NoContent(http.StatusNoContent)
	}
	if plan == nil {
		return errors.New("the herder returned no restart plan")
	}
	return writeJSON(c, http.StatusAccepted, plan)
}

func (s *Server) pauseConnector(c echo.Context) error {
	return s.targetState(c, s.h.PauseConnector, http.StatusAccepted)
}

func (s *Server) resumeConnector(c echo.Context) error {
	return s.targetState(c, s.h.ResumeConnector, http.StatusAccepted)
}

func (s *Server) stopConnector(c echo.Context) error {
	return s.targetState(c, s.h.StopConnector, http.StatusNoContent)
}

func (s *Server) targetState(c echo.Context, fn func(context.Context, string) error, status int) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	if err := call0(s, c, func(ctx context.Context) error { return fn(ctx, name) }); err != nil {
		return err
	}
	return c.NoContent(status)
}

// activeTopics answers KIP-558's {"<connector>":{"topics":[...]}}. Kafka
// reads the status store without asking whether the connector exists, so a
// connector the herder does not know has no active topics (200, empty),
// and resetting them is accepted (202); tracking disabled is still 403.
func (s *Server) activeTopics(c echo.Context) error {
	name, err := param(c, "connector")
	if err != nil {
		return err
	}
	topics, err := call(s, c, func(ctx context.Context) ([]string, error) {
		return s.h.ConnectorActiveTopics(ctx, name)
	})
	if errors.Is(err, herder.ErrNotFound) {
		topics, err = nil, nil
	}
	if err != nil {
		return err
	}
	if topics == nil {
		topics = []string{}
	}
	type activeTopics struct {
		Topics []string `json:"topics"`
	}
	return writeJSON(c, http.StatusOK, map[string]activeTopics{name: {Topics: topics}})
}

func (s *Server) resetActiveTopics(c echo.Context) error {
	return s.targetState(c, func(ctx context.Context, name string) error {
		if err := s.h.ResetConnectorActiveTopics(ctx, name); !errors.Is(err, herder.ErrNotFound) {
			return err
		}
		return nil
	}, http.StatusAccepted)
}

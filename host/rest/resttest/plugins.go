package resttest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-io/sluice/host/herder"
)

type plugin struct {
	class, typ, version, taskClass string
	defs                           []herder.ConfigKeyInfo
}

func str(s string) *string { return &s }

func def(name, typ string, dflt *string, importance, doc string, group *string, order int, width, display string) herder.ConfigKeyInfo {
	return herder.ConfigKeyInfo{
		Name: name, Type: typ, Required: dflt == nil, DefaultValue: dflt, Importance: importance,
		Documentation: doc, Group: group, Order: order, Width: width, DisplayName: display, Dependents: []string{},
	}
}

// common are the framework's connector settings this fake knows (a subset
// of Kafka's "Common" group).
var common = []herder.ConfigKeyInfo{
	def("name", "STRING", nil, "HIGH", "Globally unique name to use for this connector.", str("Common"), 1, "MEDIUM", "Connector name"),
	def("connector.class", "STRING", nil, "HIGH", "Name or alias of the class for this connector.", str("Common"), 2, "LONG", "Connector class"),
	def("tasks.max", "INT", str("1"), "HIGH", "Maximum number of tasks to use for this connector.", str("Common"), 3, "SHORT", "Tasks max"),
}

var plugins = []plugin{
	{
		class: "org.apache.kafka.connect.file.FileStreamSinkConnector", typ: typeSink, version: "4.0.0",
		taskClass: "org.apache.kafka.connect.file.FileStreamSinkTask",
		defs: []herder.ConfigKeyInfo{
			def("file", "STRING", nil, "HIGH", "Destination filename. If not specified, the standard output will be used", nil, -1, "NONE", "file"),
		},
	},
	{
		class: "org.apache.kafka.connect.file.FileStreamSourceConnector", typ: typeSource, version: "4.0.0",
		taskClass: "org.apache.kafka.connect.file.FileStreamSourceTask",
		defs: []herder.ConfigKeyInfo{
			def("file", "STRING", nil, "HIGH", "Source filename. If not specified, the standard input will be used", nil, -1, "NONE", "file"),
			def("topic", "LIST", nil, "HIGH", "The topic to publish data to", nil, -1, "NONE", "topic"),
			def("batch.size", "INT", str("2000"), "LOW", "The maximum number of records the source task can read from the file each time it is polled", nil, -1, "NONE", "batch.size"),
		},
	},
	{class: "org.apache.kafka.connect.transforms.InsertField$Value", typ: "transformation", version: "4.0.0"},
	{class: "org.apache.kafka.connect.transforms.predicates.HasHeaderKey", typ: "predicate", version: "4.0.0"},
	{class: "org.apache.kafka.connect.json.JsonConverter", typ: "converter", version: "4.0.0"},
	{class: "org.apache.kafka.connect.storage.StringConverter", typ: "converter", version: "4.0.0"},
	{class: "org.apache.kafka.connect.storage.SimpleHeaderConverter", typ: "header_converter", version: "4.0.0"},
}

// lookup resolves a class by full name, simple name, or simple name without
// "Connector" (FileStreamSource).
func lookup(name string) (plugin, bool) {
	for _, p := range plugins {
		simple := p.class[strings.LastIndexByte(p.class, '.')+1:]
		if name == p.class || name == simple || name+"Connector" == simple {
			return p, true
		}
	}
	return plugin{}, false
}

// validate answers the errors of config, one line per error as Kafka's
// "Invalid value ..." messages, and the class when it resolves.
func validate(config map[string]string) (plugin, []string) {
	var errs []string
	for _, v := range validationResult(config).Configs {
		if v.Value != nil {
			errs = append(errs, v.Value.Errors...)
		}
	}
	p, _ := lookup(config["connector.class"])
	return p, errs
}

var topicName = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// validationResult is the ConfigInfos of config.
func validationResult(config map[string]string) *herder.ConfigInfos {
	class := config["connector.class"]
	p, known := lookup(class)
	defs := append([]herder.ConfigKeyInfo(nil), common...)
	if known {
		defs = append(defs, p.defs...)
	}
	errsOf := map[string][]string{}
	add := func(key, format string, args ...any) { errsOf[key] = append(errsOf[key], fmt.Sprintf(format, args...)) }

	name := config["name"]
	switch {
	case strings.TrimSpace(name) == "":
		add("name", "Invalid value %s for configuration name: String may not be empty", name)
	case hasControl(name):
		add("name", "Invalid value %s for configuration name: String may not contain control sequences but had the following ASCII control sequences: %q", name, name)
	}
	if !known {
		add("connector.class", "Invalid value %s for configuration connector.class: Class %s could not be found.", class, class)
	}
	if v, ok := config["tasks.max"]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err != nil {
			add("tasks.max", "Invalid value %s for configuration tasks.max: Not a number of type INT", v)
		} else if n < 1 {
			add("tasks.max", "Invalid value %d for configuration tasks.max: Value must be at least 1", n)
		}
	}
	if known {
		for _, d := range p.defs {
			if _, ok := config[d.Name]; !ok && d.Required && d.Name != "file" {
				add(d.Name, "Missing required configuration \"%s\" which has no default value.", d.Name)
			}
		}
		if p.typ == typeSink {
			topics, regex := config["topics"], config["topics.regex"]
			switch {
			case topics == "" && regex == "":
				add("topics", "Must configure one of topics or topics.regex")
			case topics != "" && regex != "":
				add("topics", "topics and topics.regex are mutually exclusive options, but both are set.")
			}
			for _, t := range strings.Split(topics, ",") {
				if t = strings.TrimSpace(t); t != "" && !topicName.MatchString(t) {
					add("topics", "Invalid value %s for configuration topics: not a valid topic name", t)
				}
			}
		}
	}

	out := &herder.ConfigInfos{Name: class, Groups: []string{"Common"}}
	for i := range defs {
		d := defs[i]
		val := &herder.ConfigValueInfo{Name: d.Name, RecommendedValues: []string{}, Errors: errsOf[d.Name], Visible: true}
		if val.Errors == nil {
			val.Errors = []string{}
		}
		if v, ok := config[d.Name]; ok {
			val.Value = &v
		} else {
			val.Value = d.DefaultValue
		}
		out.ErrorCount += len(val.Errors)
		out.Configs = append(out.Configs, herder.ConfigInfo{Definition: &d, Value: val})
		delete(errsOf, d.Name)
	}
	// Errors on keys without a definition (topics of a sink here).
	for _, key := range sortedKeys(errsOf) {
		v := config[key]
		out.ErrorCount += len(errsOf[key])
		out.Configs = append(out.Configs, herder.ConfigInfo{Value: &herder.ConfigValueInfo{
			Name: key, Value: &v, RecommendedValues: []string{}, Errors: errsOf[key], Visible: true,
		}})
	}
	return out
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Connector types as Kafka spells them.
const (
	typeSource = "source"
	typeSink   = "sink"
)

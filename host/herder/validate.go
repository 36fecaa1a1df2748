package herder

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-io/sluice/host/runtime"
	"github.com/sluice-io/sluice/pluginsdk/config"
	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

// ErrUnknownClass marks a Lookup error for a connector class no plugin
// serves (Instances implementations wrap it).
var ErrUnknownClass = errors.New("unknown connector class")

// ValidateConfig implements Herder.
func (h *Standalone) ValidateConfig(ctx context.Context, cfg map[string]string) (*ConfigInfos, error) {
	infos, _, err := h.validate(ctx, cfg)
	return infos, err
}

// validate validates a connector config as Kafka's AbstractHerder does: the
// framework settings of the connector's type (with the per-alias settings
// of its transforms and predicates), the sink topic rules, the converters,
// the client override policy, and the connector's own answer from its
// plugin, merged into one ConfigInfos.
func (h *Standalone) validate(ctx context.Context, raw map[string]string) (*ConfigInfos, Class, error) {
	// Validate what the connector would start with, as Kafka's
	// AbstractHerder does; the answer shows the values as submitted.
	cfg, err := h.opts.Resolver.Resolve(ctx, raw)
	if err != nil {
		return nil, Class{}, Errorf(ErrBadRequest, "%s", err.Error())
	}
	// The answer and any error show submitted text in place of every
	// resolved value: the plugin, converters and transforms saw (and may
	// quote) the resolved config.
	infos, class, err := h.validateResolved(ctx, raw, cfg)
	m := newMasker(raw, cfg)
	if infos != nil {
		m.infos(infos)
	}
	return infos, class, m.err(err)
}

// validateResolved validates cfg, the resolved form of raw; messages that
// quote the config are built from raw, as submitted.
func (h *Standalone) validateResolved(ctx context.Context, raw, cfg map[string]string) (*ConfigInfos, Class, error) {
	className := strings.TrimSpace(cfg[KeyConnectorClass])
	if className == "" {
		return nil, Class{}, Errorf(ErrBadRequest, "Connector config %s contains no connector type", javaMap(raw))
	}
	class, err := h.in.Lookup(ctx, className)
	if err != nil {
		return nil, Class{}, h.lookupError(strings.TrimSpace(raw[KeyConnectorClass]), err)
	}

	end := h.stages.begin("performing multi-property validation for the connector")
	pluginValues, err := h.in.Validate(ctx, class, cfg)
	end()
	if err != nil {
		if ctx.Err() != nil {
			return nil, class, fmt.Errorf("validate connector config with %s: %w", class.Name, ctx.Err())
		}
		return nil, class, fmt.Errorf("validate connector config with %s: %w", class.Name, err)
	}

	fw := FrameworkDef(class.Type)
	aliasDefs(fw, cfg, h.opts.Transforms)
	fwValues := fw.Validate(cfg)
	byName := map[string]*config.ConfigValue{}
	for i := range fwValues {
		byName[fwValues[i].Name] = &fwValues[i]
	}
	transformExtra := h.transformValues(cfg, byName)
	if class.Type == TypeSink {
		validateSinkTopics(cfg, byName)
	}
	if class.Type == TypeSource && h.opts.TopicCreation {
		transformExtra = append(transformExtra, topicCreationValues(cfg, byName)...)
	}
	if h.opts.Converters != nil {
		for _, key := range []string{KeyKeyConverter, KeyValueConverter, KeyHeaderConverter} {
			v := byName[key]
			if v == nil || len(v.Errors) > 0 {
				continue
			}
			if cls, ok := cfg[key]; ok && strings.TrimSpace(cls) != "" {
				if err := h.opts.Converters(key, strings.TrimSpace(cls), cfg); err != nil {
					v.AddError(err.Error())
				}
			}
		}
	}

	keys, fwValues := withoutUnsetExtensions(class.Type, cfg, fw.Proto().GetKeys(), fwValues)
	groups := fw.Groups()
	values := config.ConfigValuesProto(fwValues)
	values = append(values, config.ConfigValuesProto(transformExtra)...)
	values = append(values, h.overrideValues(cfg, class.Type)...)
	// The connector's own settings follow the framework's; a connector that
	// declares a framework setting again replaces its definition in place,
	// as LinkedHashMap.putAll does in Kafka.
	at := map[string]int{}
	for i, k := range keys {
		at[k.GetName()] = i
	}
	for _, k := range class.Def.GetConfig().GetKeys() {
		if i, ok := at[k.GetName()]; ok {
			keys[i] = k
			continue
		}
		at[k.GetName()] = len(keys)
		keys = append(keys, k)
		if g := k.GetGroup(); g != "" && !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	values = append(values, pluginValues...)
	return generateResult(class.Name, keys, values, groups), class, nil
}

// TransformValidator is optionally implemented by a TransformCatalog
// (transforms.ValidateConfig): it validates the transforms and predicates
// settings of a connector config as a whole, which finds what checks of
// single keys cannot (an invalid regex, an undefined predicate, a class
// that refuses its settings), with Kafka's messages.
type TransformValidator interface {
	ValidateConfig(cfg map[string]string) []config.ConfigValue
}

// transformValues puts the catalog's own validation of the transform and
// predicate settings in place of the per-key checks of those settings:
// its errors replace theirs, key by key; it returns the values with errors
// on keys the framework does not define.
func (h *Standalone) transformValues(cfg map[string]string, byName map[string]*config.ConfigValue) []config.ConfigValue {
	tv, ok := h.opts.Transforms.(TransformValidator)
	if !ok {
		return nil
	}
	var extra []config.ConfigValue
	for _, v := range tv.ValidateConfig(cfg) {
		if !isTransformKey(v.Name) {
			continue
		}
		if cur := byName[v.Name]; cur != nil {
			cur.Errors = slices.Clone(v.Errors)
		} else if len(v.Errors) > 0 {
			extra = append(extra, v)
		}
	}
	return extra
}

// topicCreationValues puts the problems of a source connector's
// topic.creation.* settings (KIP-158) on their keys, as Kafka Connect's
// source connector config does when the worker creates topics, so that a
// connector that would fail its tasks at their first record is refused
// when it is created; it returns the values of keys the framework does not
// define.
func topicCreationValues(cfg map[string]string, byName map[string]*config.ConfigValue) []config.ConfigValue {
	problems := runtime.ValidateTopicCreation(cfg)
	var extra []config.ConfigValue
	for _, key := range slices.Sorted(maps.Keys(problems)) {
		if cur := byName[key]; cur != nil {
			for _, msg := range problems[key] {
				cur.AddError(msg)
			}
			continue
		}
		extra = append(extra, config.ConfigValue{Name: key, Value: cfg[key], Errors: problems[key], Visible: true})
	}
	return extra
}

func isTransformKey(name string) bool {
	return name == KeyTransforms || name == KeyPredicates ||
		strings.HasPrefix(name, KeyTransforms+".") || strings.HasPrefix(name, KeyPredicates+".")
}

// lookupError answers a connector.class no plugin serves with Kafka's
// message, plus the names that come close.
func (h *Standalone) lookupError(className string, err error) error {
	if !errors.Is(err, ErrUnknownClass) {
		return Errorf(ErrBadRequest, "Invalid connector class %s: %v", className, err)
	}
	var names []string
	for _, c := range h.in.Classes() {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	msg := "Failed to find any class that implements Connector and which name matches " + className
	if near := closeNames(className, h.in.Classes()); len(near) > 0 {
		msg += " (did you mean " + strings.Join(near, " or ") + "?)"
	}
	if len(names) == 0 {
		msg += "; no connector plugins were found in plugin.path"
	} else {
		msg += ", available connectors are: " + strings.Join(names, ", ")
	}
	return &Error{Message: msg}
}

// generateResult builds the answer as Kafka's AbstractHerder.generateResult
// does: values of undefined names first (definition null), then one entry
// per defined key in order, with its value when one was validated (the
// last value of a name wins); error_count counts the error strings shown.
func generateResult(className string, keys []*pluginv1.ConfigKey, values []*pluginv1.ConfigValue, groups []string) *ConfigInfos {
	defined := map[string]*pluginv1.ConfigKey{}
	for _, k := range keys {
		defined[k.GetName()] = k
	}
	valueOf := map[string]*pluginv1.ConfigValue{}
	out := &ConfigInfos{Name: className, Groups: groups, Configs: []ConfigInfo{}}
	if out.Groups == nil {
		out.Groups = []string{}
	}
	for _, v := range values {
		valueOf[v.GetName()] = v
		if _, ok := defined[v.GetName()]; !ok {
			out.Configs = append(out.Configs, ConfigInfo{Value: valueInfo(v, nil)})
			out.ErrorCount += len(v.GetErrors())
		}
	}
	for _, k := range keys {
		ci := ConfigInfo{Definition: keyInfo(k)}
		if v, ok := valueOf[k.GetName()]; ok {
			ci.Value = valueInfo(v, k)
			out.ErrorCount += len(v.GetErrors())
		}
		out.Configs = append(out.Configs, ci)
	}
	return out
}

// KeyInfo converts a config key for the REST API (ConfigKeyInfo).
func KeyInfo(k *pluginv1.ConfigKey) ConfigKeyInfo { return *keyInfo(k) }

func keyInfo(k *pluginv1.ConfigKey) *ConfigKeyInfo {
	ki := &ConfigKeyInfo{
		Name:          k.GetName(),
		Type:          strings.TrimPrefix(k.GetType().String(), "CONFIG_TYPE_"),
		Required:      k.GetRequired(),
		Importance:    strings.TrimPrefix(k.GetImportance().String(), "IMPORTANCE_"),
		Documentation: k.GetDocumentation(),
		Order:         int(k.GetOrderInGroup()),
		Width:         strings.TrimPrefix(k.GetWidth().String(), "WIDTH_"),
		DisplayName:   k.GetDisplayName(),
		Dependents:    slices.Clone(k.GetDependents()),
	}
	if ki.Importance == "UNSPECIFIED" {
		ki.Importance = "LOW"
	}
	if ki.Width == "UNSPECIFIED" {
		ki.Width = "NONE"
	}
	if ki.DisplayName == "" {
		ki.DisplayName = ki.Name
	}
	if ki.Dependents == nil {
		ki.Dependents = []string{}
	}
	if k.DefaultValue != nil && !k.GetRequired() {
		d := k.GetDefaultValue()
		if k.GetType() == pluginv1.ConfigType_CONFIG_TYPE_PASSWORD && d != "" {
			d = config.Hidden
		}
		ki.DefaultValue = &d
	}
	if g := k.GetGroup(); g != "" {
		ki.Group = &g
	}
	return ki
}

// valueInfo converts a validated value; a PASSWORD value is always shown
// as "[hidden]", whatever the plugin sent.
func valueInfo(v *pluginv1.ConfigValue, k *pluginv1.ConfigKey) *ConfigValueInfo {
	vi := &ConfigValueInfo{
		Name:              v.GetName(),
		RecommendedValues: slices.Clone(v.GetRecommendedValues()),
		Errors:            slices.Clone(v.GetErrors()),
		Visible:           v.GetVisible(),
	}
	if vi.RecommendedValues == nil {
		vi.RecommendedValues = []string{}
	}
	if vi.Errors == nil {
		vi.Errors = []string{}
	}
	if v.Value != nil {
		s := v.GetValue()
		if k != nil && k.GetType() == pluginv1.ConfigType_CONFIG_TYPE_PASSWORD {
			s = config.Hidden
		}
		vi.Value = &s
	}
	return vi
}

// validateSinkTopics applies Kafka's SinkConnectorConfig.validate: exactly
// one of topics and topics.regex, and a dead letter queue topic that is not
// among the topics consumed.
func validateSinkTopics(cfg map[string]string, byName map[string]*config.ConfigValue) {
	add := func(key, msg string) {
		if v := byName[key]; v != nil {
			v.AddError(msg)
		}
	}
	topics, regex := strings.TrimSpace(cfg[KeyTopics]), strings.TrimSpace(cfg[KeyTopicsRegex])
	dlq := strings.TrimSpace(cfg[KeyDLQTopicName])
	hasTopics, hasRegex := topics != "", regex != ""
	if hasTopics && hasRegex {
		msg := KeyTopics + " and " + KeyTopicsRegex + " are mutually exclusive options, but both are set."
		add(KeyTopics, msg)
		add(KeyTopicsRegex, msg)
	}
	if !hasTopics && !hasRegex {
		msg := "Must configure one of " + KeyTopics + " or " + KeyTopicsRegex
		add(KeyTopics, msg)
		add(KeyTopicsRegex, msg)
	}
	if dlq == "" {
		return
	}
	if hasTopics {
		// As Kafka's parseTopicsList: empty and repeated names dropped.
		var list []string
		for _, t := range splitList(topics) {
			if !slices.Contains(list, t) {
				list = append(list, t)
			}
		}
		if slices.Contains(list, dlq) {
			add(KeyTopics, fmt.Sprintf("The DLQ topic '%s' may not be included in the list of topics ('%s=[%s]') consumed by the connector", dlq, KeyTopics, strings.Join(list, ", ")))
		}
	}
	if hasRegex {
		if re, err := regexp.Compile("^(?:" + regex + ")$"); err == nil && re.MatchString(dlq) {
			add(KeyTopicsRegex, fmt.Sprintf("The DLQ topic '%s' may not be matched by the regex for the topics ('%s=%s') consumed by the connector", dlq, KeyTopicsRegex, regex))
		}
	}
}

// splitList splits a LIST setting as Kafka does: commas, surrounding white
// space dropped, empty entries dropped.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// principalAllowed are the client settings the Principal policy lets a
// connector override.
var principalAllowed = []string{"sasl.jaas.config", "sasl.mechanism", "security.protocol"}

// overrideValues checks producer/consumer/admin.override.* settings
// against connector.client.config.override.policy; only problems are
// reported, as values of undefined names. As in Kafka Connect, only the
// overrides of clients the connector uses are checked (the others are
// never applied): the producer for a source or a dead letter queue, the
// consumer for a sink, the admin client for a source's topic.creation.*
// settings or a dead letter queue (Sluice's sources have one too).
func (h *Standalone) overrideValues(cfg map[string]string, typ string) []*pluginv1.ConfigValue {
	if h.opts.OverridePolicy == PolicyAll {
		return nil
	}
	dlq := strings.TrimSpace(cfg[KeyDLQTopicName]) != ""
	var prefixes []string
	if typ == TypeSource || dlq {
		prefixes = append(prefixes, ProducerOverridePrefix)
	}
	if typ == TypeSink {
		prefixes = append(prefixes, ConsumerOverridePrefix)
	}
	if dlq || typ == TypeSource && usesTopicCreation(cfg) {
		prefixes = append(prefixes, AdminOverridePrefix)
	}
	var out []*pluginv1.ConfigValue
	names := slices.Sorted(maps.Keys(cfg))
	for _, k := range names {
		var rest string
		for _, p := range prefixes {
			if r, ok := strings.CutPrefix(k, p); ok {
				rest = r
				break
			}
		}
		if rest == "" {
			continue
		}
		if h.opts.OverridePolicy == PolicyPrincipal && slices.Contains(principalAllowed, rest) {
			continue
		}
		v := cfg[k]
		out = append(out, &pluginv1.ConfigValue{
			Name:    k,
			Value:   &v,
			Visible: true,
			Errors:  []string{fmt.Sprintf("The '%s' policy does not allow '%s' to be overridden in the connector configuration.", h.opts.OverridePolicy, rest)},
		})
	}
	return out
}

// usesTopicCreation reports whether a source's config has any
// topic.creation.* setting, Kafka Connect's test for whether the
// connector's admin client overrides are checked.
func usesTopicCreation(cfg map[string]string) bool {
	for k := range cfg {
		if strings.HasPrefix(k, "topic.creation.") {
			return true
		}
	}
	return false
}

// ConfigErrors turns a validation answer with errors into Kafka's 400
// ("Connector configuration is invalid and contains the following N
// error(s): ..."); nil when it has none.
func ConfigErrors(infos *ConfigInfos) error {
	if infos.ErrorCount == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Connector configuration is invalid and contains the following %d error(s):", infos.ErrorCount)
	for _, ci := range infos.Configs {
		if ci.Value == nil {
			continue
		}
		for _, e := range ci.Value.Errors {
			b.WriteString("\n")
			b.WriteString(e)
		}
	}
	b.WriteString("\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`")
	return &Error{Kind: ErrBadRequest, Message: b.String()}
}

// javaMap prints a config as Java's Map.toString does ({k=v, k2=v2}), with
// keys sorted for a stable message.
func javaMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// closeNames suggests up to three known class names or short names near
// name: same ignoring case, a small edit distance, or containing it.
func closeNames(name string, classes []Class) []string {
	want := strings.ToLower(name)
	type cand struct {
		name string
		d    int
	}
	var found []cand
	seen := map[string]bool{}
	for _, c := range classes {
		simple := c.Name[strings.LastIndex(c.Name, ".")+1:]
		for _, n := range []string{c.Name, simple, strings.TrimSuffix(simple, "Connector")} {
			if seen[n] {
				continue
			}
			seen[n] = true
			l := strings.ToLower(n)
			d := editDistance(want, l)
			if d <= max(2, len(want)/3) || (len(want) >= 4 && strings.Contains(l, want)) {
				found = append(found, cand{n, d})
			}
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].d != found[j].d {
			return found[i].d < found[j].d
		}
		return found[i].name < found[j].name
	})
	var out []string
	for _, f := range found {
		if len(out) == 3 {
			break
		}
		out = append(out, f.name)
	}
	return out
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// extensionKeys are the framework settings Sluice adds to Kafka Connect's:
// automatic task restarts, a dead letter queue for sources, and the bounds
// of a sink batch.
func extensionKeys(typ string) []string {
	keys := []string{KeyTaskRestartEnable, KeyTaskRestartMaxAttempts, KeyTaskRestartBackoffInitial, KeyTaskRestartBackoffMax}
	switch typ {
	case TypeSource:
		keys = append(keys, KeyDLQTopicName, KeyDLQTopicReplicationFactor, KeyDLQContextHeadersEnable)
	case TypeSink:
		keys = append(keys, KeySinkBatchMaxRecords, KeySinkBatchMaxBytes)
	}
	return keys
}

// withoutUnsetExtensions leaves Sluice's extension settings out of a
// validate answer unless the config sets them, so the answer lists exactly
// Kafka Connect's keys for configs written for Kafka Connect (tools compare
// the key set, as Kafka's own connect_rest_test.py does).
func withoutUnsetExtensions(typ string, cfg map[string]string, keys []*pluginv1.ConfigKey, values []config.ConfigValue) ([]*pluginv1.ConfigKey, []config.ConfigValue) {
	hide := map[string]bool{}
	for _, k := range extensionKeys(typ) {
		if _, set := cfg[k]; !set {
			hide[k] = true
		}
	}
	keys = slices.DeleteFunc(keys, func(k *pluginv1.ConfigKey) bool { return hide[k.GetName()] })
	values = slices.DeleteFunc(values, func(v config.ConfigValue) bool { return hide[v.Name] })
	return keys, values
}

package herder

import (
	"context"
	"sort"
	"strings"
)

// Plugins implements Herder: connector classes, sinks first then sources,
// each sorted by class name; with connectorsOnly false, the other plugins
// too (converters, transforms, predicates).
func (h *Standalone) Plugins(_ context.Context, connectorsOnly bool) ([]PluginInfo, error) {
	classes := h.in.Classes()
	sort.Slice(classes, func(i, j int) bool {
		if classes[i].Type != classes[j].Type {
			return classes[i].Type == TypeSink
		}
		return classes[i].Name < classes[j].Name
	})
	out := make([]PluginInfo, 0, len(classes))
	for _, c := range classes {
		v := c.Version
		if v == "undefined" {
			v = ""
		}
		out = append(out, PluginInfo{Class: c.Name, Type: c.Type, Version: v})
	}
	if !connectorsOnly && h.opts.OtherPlugins != nil {
		out = append(out, h.opts.OtherPlugins()...)
	}
	return out, nil
}

// PluginConfig implements Herder: the connector's own settings first, then
// the framework's for its type.
func (h *Standalone) PluginConfig(ctx context.Context, plugin string) ([]ConfigKeyInfo, error) {
	if h.opts.OtherPluginConfig != nil {
		if keys, ok := h.opts.OtherPluginConfig(strings.TrimSpace(plugin)); ok {
			return keys, nil
		}
	}
	class, err := h.in.Lookup(ctx, strings.TrimSpace(plugin))
	if err != nil {
		return nil, Errorf(ErrNotFound, "Unknown plugin %s.", plugin)
	}
	var out []ConfigKeyInfo
	seen := map[string]bool{}
	for _, k := range class.Def.GetConfig().GetKeys() {
		seen[k.GetName()] = true
		out = append(out, KeyInfo(k))
	}
	for _, k := range FrameworkDef(class.Type).Proto().GetKeys() {
		if !seen[k.GetName()] {
			out = append(out, KeyInfo(k))
		}
	}
	return out, nil
}

package config

import (
	"fmt"
	"slices"

	pluginv1 "github.com/sluice-io/sluice/proto/sluice/plugin/v1"
)

var typeToProto = [...]pluginv1.ConfigType{
	Boolean:  pluginv1.ConfigType_CONFIG_TYPE_BOOLEAN,
	String:   pluginv1.ConfigType_CONFIG_TYPE_STRING,
	Int:      pluginv1.ConfigType_CONFIG_TYPE_INT,
	Short:    pluginv1.ConfigType_CONFIG_TYPE_SHORT,
	Long:     pluginv1.ConfigType_CONFIG_TYPE_LONG,
	Double:   pluginv1.ConfigType_CONFIG_TYPE_DOUBLE,
	List:     pluginv1.ConfigType_CONFIG_TYPE_LIST,
	Class:    pluginv1.ConfigType_CONFIG_TYPE_CLASS,
	Password: pluginv1.ConfigType_CONFIG_TYPE_PASSWORD,
}

var importanceToProto = [...]pluginv1.Importance{
	High:   pluginv1.Importance_IMPORTANCE_HIGH,
	Medium: pluginv1.Importance_IMPORTANCE_MEDIUM,
	Low:    pluginv1.Importance_IMPORTANCE_LOW,
}

var widthToProto = [...]pluginv1.Width{
	WidthNone:   pluginv1.Width_WIDTH_UNSPECIFIED,
	WidthShort:  pluginv1.Width_WIDTH_SHORT,
	WidthMedium: pluginv1.Width_WIDTH_MEDIUM,
	WidthLong:   pluginv1.Width_WIDTH_LONG,
}

// Proto describes the definition for the worker. Defaults travel as Kafka
// prints them (so a PASSWORD default is "[hidden]"), validators as their
// descriptions.
func (d *Def) Proto() *pluginv1.ConfigDef {
	out := &pluginv1.ConfigDef{Keys: make([]*pluginv1.ConfigKey, len(d.keys))}
	for i, k := range d.keys {
		pk := &pluginv1.ConfigKey{
			Name:              k.Name,
			Type:              typeToProto[k.Type],
			Required:          k.Required,
			Importance:        importanceToProto[k.Importance],
			Documentation:     k.Doc,
			Group:             k.Group,
			OrderInGroup:      int32(k.OrderInGroup),
			Width:             widthToProto[k.Width],
			DisplayName:       k.DisplayName,
			Dependents:        slices.Clone(k.Dependents),
			RecommendedValues: slices.Clone(k.Recommended),
		}
		if s, ok := k.DefaultString(); ok {
			pk.DefaultValue = &s
		}
		if k.Validator != nil {
			pk.Validator = k.Validator.String()
		}
		out.Keys[i] = pk
	}
	return out
}

// DefFromProto rebuilds a definition on the worker's side. Validators become
// Described (descriptions only: the plugin validates), defaults are parsed
// back from their printed form.
func DefFromProto(p *pluginv1.ConfigDef) (*Def, error) {
	d := NewDef()
	for i, pk := range p.GetKeys() {
		k := Key{
			Name:         pk.GetName(),
			Required:     pk.GetRequired(),
			Doc:          pk.GetDocumentation(),
			Group:        pk.GetGroup(),
			OrderInGroup: int(pk.GetOrderInGroup()),
			DisplayName:  pk.GetDisplayName(),
			Dependents:   slices.Clone(pk.GetDependents()),
			Recommended:  slices.Clone(pk.GetRecommendedValues()),
		}
		t := slices.Index(typeToProto[:], pk.GetType())
		if t <= int(TypeInvalid) {
			return nil, fmt.Errorf("config key %d (%s): invalid type %v", i, pk.GetName(), pk.GetType())
		}
		k.Type = Type(t)
		if imp := slices.Index(importanceToProto[:], pk.GetImportance()); imp > 0 {
			k.Importance = Importance(imp)
		}
		if w := slices.Index(widthToProto[:], pk.GetWidth()); w >= 0 {
			k.Width = Width(w)
		}
		if pk.DefaultValue != nil && !k.Required {
			if k.Type == String || k.Type == Class || k.Type == Password {
				k.Default = *pk.DefaultValue
			} else {
				v, err := parseString(k.Name, *pk.DefaultValue, k.Type)
				if err != nil {
					return nil, fmt.Errorf("config key %s: default: %w", k.Name, err)
				}
				k.Default = v
			}
		}
		if pk.GetValidator() != "" {
			k.Validator = Described(pk.GetValidator())
		}
		// Keep order-in-group exactly as sent (Add would turn 0 into -1 for
		// ungrouped keys; the sender already did).
		order := k.OrderInGroup
		if err := d.Add(k); err != nil {
			return nil, fmt.Errorf("config key %d: %w", i, err)
		}
		d.keys[len(d.keys)-1].OrderInGroup = order
	}
	return d, nil
}

// ConfigValuesProto converts validation results for the wire. Values travel
// as Kafka Connect prints them: secrets as "[hidden]".
func ConfigValuesProto(vs []ConfigValue) []*pluginv1.ConfigValue {
	out := make([]*pluginv1.ConfigValue, len(vs))
	for i, v := range vs {
		pv := &pluginv1.ConfigValue{
			Name:              v.Name,
			RecommendedValues: slices.Clone(v.Recommended),
			Errors:            slices.Clone(v.Errors),
			Visible:           v.Visible,
		}
		if s, ok := v.ValueString(); ok {
			pv.Value = &s
		}
		out[i] = pv
	}
	return out
}

// ConfigValuesFromProto is the inverse of ConfigValuesProto; values come
// back as strings (or nil).
func ConfigValuesFromProto(ps []*pluginv1.ConfigValue) []ConfigValue {
	out := make([]ConfigValue, len(ps))
	for i, p := range ps {
		v := ConfigValue{
			Name:        p.GetName(),
			Recommended: slices.Clone(p.GetRecommendedValues()),
			Errors:      slices.Clone(p.GetErrors()),
			Visible:     p.GetVisible(),
		}
		if p.Value != nil {
			v.Value = *p.Value
		}
		out[i] = v
	}
	return out
}

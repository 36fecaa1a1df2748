package transforms

import (
	"errors"
	"slices"
	"strings"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

// Transformation is a single message transform (Kafka Connect's
// Transformation). Apply returns the record to pass on, which may be r
// itself or a new record, or nil to drop it. It never modifies r or the
// schemas and values r refers to: records and schemas may be shared. A
// Transformation is safe for concurrent use.
type Transformation interface {
	Apply(r *data.Record) (*data.Record, error)
}

// SinkTransformation is a Transformation that reads what only sink
// records carry: InsertField's offset.field. Chains call ApplySink for
// sink records (ChainT.ApplySink); Apply treats the record as a source
// record, which has no offset.
type SinkTransformation interface {
	Transformation
	ApplySink(r *data.Record, offset int64) (*data.Record, error)
}

// Predicate decides whether a transformation applies to a record (Kafka
// Connect's Predicate, KIP-585). It is safe for concurrent use.
type Predicate interface {
	Test(r *data.Record) (bool, error)
}

// Plugin types, as GET /connector-plugins names them.
const (
	TypeTransformation = "transformation"
	TypePredicate      = "predicate"
)

// Version is the version every built-in class reports: the Apache Kafka
// release whose transforms these mirror, as Kafka's built-ins report
// their Kafka version.
const Version = "4.0.0"

const (
	pkgTransforms = "org.apache.kafka.connect.transforms."
	pkgPredicates = "org.apache.kafka.connect.transforms.predicates."
)

// Class describes one transformation or predicate class.
type Class struct {
	// Name is the full Java class name Kafka Connect configurations use
	// ("org.apache.kafka.connect.transforms.InsertField$Value").
	Name string
	// Aliases are the other names New and NewPredicate accept.
	Aliases []string
	// Type is TypeTransformation or TypePredicate.
	Type    string
	Version string
	// Doc is the class's overview.
	Doc string
	// Config declares the class's settings, in Kafka's order. It is
	// shared: read it, do not define more keys in it.
	Config *config.Def
}

type plugin struct {
	Class
	newT func(v *config.Values) (Transformation, error)
	newP func(v *config.Values) (Predicate, error)
}

type registryT struct {
	plugins []*plugin
	byName  map[string]*plugin
	// abstract maps an abstract base class (InsertField) to its concrete
	// nested classes, for Kafka's "Did you mean" message.
	abstract map[string][]string
}

var registry = buildRegistry()

// keyValue registers the $Key and $Value classes of a transformation.
// Besides the full names, Sluice accepts "InsertField$Value"; Kafka has no
// alias for nested classes (their simple names, Key and Value, collide).
func (r *registryT) keyValue(simple, doc string, def *config.Def, mk func(side, *config.Values) (Transformation, error)) {
	base := pkgTransforms + simple
	for _, s := range []side{keySide, valueSide} {
		r.add(&plugin{
			Class: Class{Name: base + s.suffix(), Aliases: []string{simple + s.suffix()}, Type: TypeTransformation,
				Version: Version, Doc: doc, Config: def},
			newT: func(v *config.Values) (Transformation, error) { return mk(s, v) },
		})
		r.abstract[base] = append(r.abstract[base], base+s.suffix())
	}
}

// single registers a transformation without variants; its simple name is
// its alias, as in Kafka.
func (r *registryT) single(simple, doc string, def *config.Def, mk func(*config.Values) (Transformation, error)) {
	r.add(&plugin{
		Class: Class{Name: pkgTransforms + simple, Aliases: []string{simple}, Type: TypeTransformation,
			Version: Version, Doc: doc, Config: def},
		newT: mk,
	})
}

func (r *registryT) predicate(simple, doc string, def *config.Def, mk func(*config.Values) (Predicate, error)) {
	r.add(&plugin{
		Class: Class{Name: pkgPredicates + simple, Aliases: []string{simple}, Type: TypePredicate,
			Version: Version, Doc: doc, Config: def},
		newP: mk,
	})
}

func (r *registryT) add(p *plugin) {
	r.plugins = append(r.plugins, p)
	for _, n := range append([]string{p.Name}, p.Aliases...) {
		if _, dup := r.byName[n]; dup {
			panic("transforms: class name registered twice: " + n)
		}
		r.byName[n] = p
	}
}

func buildRegistry() *registryT {
	r := &registryT{byName: map[string]*plugin{}, abstract: map[string][]string{}}
	r.keyValue("Cast", castDoc, castDef(), newCast)
	r.single("DropHeaders", dropHeadersDoc, dropHeadersDef(), newDropHeaders)
	r.keyValue("ExtractField", extractFieldDoc, extractFieldDef(), newExtractField)
	r.single("Filter", filterDoc, config.NewDef(), newFilter)
	r.keyValue("Flatten", flattenDoc, flattenDef(), newFlatten)
	r.keyValue("HeaderFrom", headerFromDoc, headerFromDef(), newHeaderFrom)
	r.keyValue("HoistField", hoistFieldDoc, hoistFieldDef(), newHoistField)
	r.keyValue("InsertField", insertFieldDoc, insertFieldDef(), newInsertField)
	r.single("InsertHeader", insertHeaderDoc, insertHeaderDef(), newInsertHeader)
	r.keyValue("MaskField", maskFieldDoc, maskFieldDef(), newMaskField)
	r.single("RegexRouter", regexRouterDoc, regexRouterDef(), newRegexRouter)
	r.keyValue("ReplaceField", replaceFieldDoc, replaceFieldDef(), newReplaceField)
	r.keyValue("SetSchemaMetadata", setSchemaMetadataDoc, setSchemaMetadataDef(), newSetSchemaMetadata)
	r.keyValue("TimestampConverter", timestampConverterDoc, timestampConverterDef(), newTimestampConverter)
	r.single("TimestampRouter", timestampRouterDoc, timestampRouterDef(), newTimestampRouter)
	r.single("ValueToKey", valueToKeyDoc, valueToKeyDef(), newValueToKey)
	r.predicate("HasHeaderKey", hasHeaderKeyDoc, hasHeaderKeyDef(), newHasHeaderKey)
	r.predicate("RecordIsTombstone", recordIsTombstoneDoc, config.NewDef(), newRecordIsTombstone)
	r.predicate("TopicNameMatches", topicNameMatchesDoc, topicNameMatchesDef(), newTopicNameMatches)
	return r
}

// Classes lists every built-in transformation, then every predicate, each
// group sorted by class name.
func Classes() []Class {
	out := make([]Class, 0, len(registry.plugins))
	for _, p := range registry.plugins {
		c := p.Class
		c.Aliases = slices.Clone(c.Aliases)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Class) int {
		if a.Type != b.Type {
			if a.Type == TypeTransformation {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Lookup finds a class by full name or alias.
func Lookup(name string) (Class, bool) {
	p, ok := registry.byName[strings.TrimSpace(name)]
	if !ok {
		return Class{}, false
	}
	return p.Class, true
}

// resolve finds the class of a transforms.<a>.type or predicates.<p>.type
// value, with Kafka's message when it names no class of the kind:
// ConfigDef's for an unknown class, Utils.ensureConcreteSubclass's for an
// abstract base or a class of the other kind.
func resolve(name, kind string) (*plugin, error) {
	name = strings.TrimSpace(name)
	if p, ok := registry.byName[name]; ok {
		if p.Type != kind {
			iface := "Transformation"
			if kind == TypePredicate {
				iface = "Predicate"
			}
			return nil, errors.New("Class class " + p.Name + " does not implement the " + iface + " interface")
		}
		return p, nil
	}
	if children, ok := registry.abstract[name]; ok {
		if kind == TypePredicate {
			return nil, errors.New("Class class " + name + " does not implement the Predicate interface")
		}
		return nil, errors.New("This class is abstract and cannot be created. Did you mean " + strings.Join(children, ", ") + "?")
	}
	return nil, errClassNotFound
}

var errClassNotFound = errors.New("class not found")

func classNotFound(name string) string { return "Class " + name + " could not be found." }

// New configures a transformation of the class (full name or alias) with
// props, the transforms.<alias>. settings without their prefix. Errors
// carry Kafka's messages.
func New(class string, props map[string]string) (Transformation, error) {
	p, err := resolve(class, TypeTransformation)
	if err != nil {
		if err == errClassNotFound {
			return nil, &config.Error{Name: "type", Message: classNotFound(class)}
		}
		return nil, &config.Error{Name: "type", Message: err.Error()}
	}
	v, err := p.Config.Parse(props)
	if err != nil {
		return nil, err
	}
	return p.newT(v)
}

// NewPredicate configures a predicate of the class (full name or alias)
// with props, the predicates.<alias>. settings without their prefix.
func NewPredicate(class string, props map[string]string) (Predicate, error) {
	p, err := resolve(class, TypePredicate)
	if err != nil {
		if err == errClassNotFound {
			return nil, &config.Error{Name: "type", Message: classNotFound(class)}
		}
		return nil, &config.Error{Name: "type", Message: err.Error()}
	}
	v, err := p.Config.Parse(props)
	if err != nil {
		return nil, err
	}
	return p.newP(v)
}

// Catalog answers the worker's questions about transformation and
// predicate classes: the settings a class declares, found by full name or
// alias. It satisfies host/herder's TransformCatalog.
type Catalog struct{}

// Transform returns the settings of a transformation class.
func (Catalog) Transform(class string) (*config.Def, bool) {
	p, err := resolve(class, TypeTransformation)
	if err != nil {
		return nil, false
	}
	return p.Config, true
}

// Predicate returns the settings of a predicate class.
func (Catalog) Predicate(class string) (*config.Def, bool) {
	p, err := resolve(class, TypePredicate)
	if err != nil {
		return nil, false
	}
	return p.Config, true
}

// Shared setting declarations.

const replaceNullDoc = "Whether to replace fields that have a default value and that are null to the default value. When set to true, the default value is used, otherwise null is used."

func replaceNullKey() config.Key {
	return config.Key{Name: "replace.null.with.default", Type: config.Boolean, Default: true,
		Importance: config.Medium, Doc: replaceNullDoc}
}

// nonEmptyList is Kafka's NonEmptyListValidator.
var nonEmptyList = config.Lambda(func(name string, v any) error {
	if l, _ := v.([]string); len(l) == 0 {
		return config.Invalid(name, v, "Empty list")
	}
	return nil
}, "non-empty list")

// configErr is a ConfigException without a setting name: its message is
// all there is.
func configErr(msg string) error { return &config.Error{Message: msg} }

// keyErr is a ConfigException whose message, Kafka's, names no setting,
// tied to the setting at fault so that validation reports it there
// rather than on the class.
func keyErr(name, msg string) error { return &config.Error{Name: name, Message: msg} }

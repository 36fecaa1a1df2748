package transforms

import (
	"regexp"

	"github.com/sluice-io/sluice/pluginsdk/config"
	"github.com/sluice-io/sluice/pluginsdk/data"
)

const topicNameMatchesDoc = "A predicate which is true for records with a topic name that matches the configured regular expression."

func topicNameMatchesDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "pattern", Type: config.String, Required: true,
			Validator:  config.All(config.NonEmptyString(), config.ValidRegex()),
			Importance: config.Medium, Doc: "A Java regular expression for matching against the name of a record's topic."})
}

type topicNameMatches struct{ re *regexp.Regexp }

func newTopicNameMatches(v *config.Values) (Predicate, error) {
	re, err := compileFull(v.String("pattern"))
	if err != nil {
		return nil, config.Invalid("pattern", v.String("pattern"), "Invalid regex: "+err.Error())
	}
	return &topicNameMatches{re: re}, nil
}

func (p *topicNameMatches) Test(r *data.Record) (bool, error) { return p.re.MatchString(r.Topic), nil }

const hasHeaderKeyDoc = "A predicate which is true for records with at least one header with the configured name."

func hasHeaderKeyDef() *config.Def {
	return config.NewDef().
		Define(config.Key{Name: "name", Type: config.String, Required: true, Validator: config.NonEmptyString(),
			Importance: config.Medium, Doc: "The header name."})
}

type hasHeaderKey struct{ name string }

func newHasHeaderKey(v *config.Values) (Predicate, error) {
	return &hasHeaderKey{name: v.String("name")}, nil
}

func (p *hasHeaderKey) Test(r *data.Record) (bool, error) {
	for _, h := range r.Headers {
		if h.Key == p.name {
			return true, nil
		}
	}
	return false, nil
}

const recordIsTombstoneDoc = "A predicate which is true for records which are tombstones (i.e. have null value)."

type recordIsTombstone struct{}

func newRecordIsTombstone(*config.Values) (Predicate, error) { return recordIsTombstone{}, nil }

func (recordIsTombstone) Test(r *data.Record) (bool, error) { return r.Value == nil, nil }

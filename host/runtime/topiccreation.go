package runtime

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Source connector settings of topic creation (KIP-158).
const (
	// TopicCreationPrefix starts every topic creation setting; a
	// connector with none leaves its topics to the broker's auto-creation.
	TopicCreationPrefix = "topic.creation."
	// KeyTopicCreationGroups lists the groups besides "default".
	KeyTopicCreationGroups = TopicCreationPrefix + "groups"
	// DefaultTopicCreationGroup is the group every topic no other group
	// takes falls into; its replication factor and partitions are
	// required.
	DefaultTopicCreationGroup = "default"
)

// The settings of a group, after topic.creation.<group>.; anything else
// there is a topic config (cleanup.policy, compression.type, ...).
const (
	topicGroupInclude           = "include"
	topicGroupExclude           = "exclude"
	topicGroupReplicationFactor = "replication.factor"
	topicGroupPartitions        = "partitions"
)

// TopicCreation is a source connector's topic creation settings: before a
// task first writes to a topic it makes sure the topic exists, creating it
// with the settings of the first group of Groups that takes it, or of
// Default.
type TopicCreation struct {
	// Groups are those of topic.creation.groups, in that order.
	Groups []TopicGroup
	// Default takes every topic no group of Groups takes.
	Default TopicGroup
	// AdminOpts are the client options of the admin client the task looks
	// its topics up and creates them with: seeds, security and the
	// connector's admin.* / admin.override.* settings (AdminOptions). They
	// come after the runner's client id, connector-adminclient-<task>, so
	// they win. The producer's options do not apply: Kafka Connect creates
	// a source task's topics with a TopicAdmin of its own, built from the
	// admin settings. ParseTopicCreation leaves them to the caller.
	AdminOpts []kgo.Opt
}

// TopicGroup is one topic creation group.
type TopicGroup struct {
	Name string
	// include and exclude match whole topic names; nil matches none. A
	// topic the group's exclude matches is not the group's, whatever its
	// include says.
	include, exclude *regexp.Regexp
	// Partitions and ReplicationFactor of the topics the group creates;
	// -1: the broker's default.
	Partitions        int32
	ReplicationFactor int16
	// Configs are the topic configs of the topics the group creates.
	Configs map[string]string
}

// takes reports whether the group creates topic.
func (g *TopicGroup) takes(topic string) bool {
	return g.include != nil && g.include.MatchString(topic) && (g.exclude == nil || !g.exclude.MatchString(topic))
}

// GroupFor returns the group that creates topic.
func (c *TopicCreation) GroupFor(topic string) *TopicGroup {
	for i := range c.Groups {
		if c.Groups[i].takes(topic) {
			return &c.Groups[i]
		}
	}
	return &c.Default
}

// ParseTopicCreation reads a source connector's topic creation settings,
// as Kafka Connect does when the worker's topic.creation.enable is true.
// It returns nil when the connector has no topic.creation.* setting: the
// task then creates no topic (the producer lets the broker create a
// missing one, if the broker does). Otherwise the default group's
// replication factor and partitions are required; another group's take
// the default group's when unset, and its include and exclude (lists of
// regular expressions that match whole topic names) are empty, so that it
// takes no topic, until set. The default group takes every topic (its own
// include and exclude are ignored).
func ParseTopicCreation(props map[string]string) (*TopicCreation, error) {
	c, errs := parseTopicCreation(props)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("topic creation: %w", err)
	}
	return c, nil
}

// parseTopicCreation is ParseTopicCreation with its problems one by one.
func parseTopicCreation(props map[string]string) (*TopicCreation, []error) {
	used := false
	for k := range props {
		if strings.HasPrefix(k, TopicCreationPrefix) {
			used = true
			break
		}
	}
	if !used {
		return nil, nil
	}
	var errs []error
	dflt := TopicGroup{Name: DefaultTopicCreationGroup, include: regexp.MustCompile(`^(?:.*)$`)}
	rf, ok, err := topicGroupInt(props, DefaultTopicCreationGroup, topicGroupReplicationFactor, 1<<15-1)
	switch {
	case err != nil:
		errs = append(errs, err)
	case !ok:
		errs = append(errs, missingSetting(DefaultTopicCreationGroup, topicGroupReplicationFactor))
	}
	dflt.ReplicationFactor = int16(rf)
	parts, ok, err := topicGroupInt(props, DefaultTopicCreationGroup, topicGroupPartitions, 1<<31-1)
	switch {
	case err != nil:
		errs = append(errs, err)
	case !ok:
		errs = append(errs, missingSetting(DefaultTopicCreationGroup, topicGroupPartitions))
	}
	dflt.Partitions = int32(parts)
	dflt.Configs = topicGroupConfigs(props, DefaultTopicCreationGroup)
	c := &TopicCreation{Default: dflt}

	var names []string
	for _, name := range configList(props[KeyTopicCreationGroups]) {
		switch {
		case name == DefaultTopicCreationGroup:
			// Always there; listing it changes nothing.
		case slices.Contains(names, name):
			errs = append(errs, &settingError{KeyTopicCreationGroups, fmt.Errorf("%s: topic creation group %s is listed twice", KeyTopicCreationGroups, name)})
		default:
			names = append(names, name)
		}
	}
	for _, name := range names {
		g := TopicGroup{Name: name, Partitions: dflt.Partitions, ReplicationFactor: dflt.ReplicationFactor,
			Configs: topicGroupConfigs(props, name)}
		var err error
		if g.include, err = topicPattern(props, name, topicGroupInclude); err != nil {
			errs = append(errs, err)
		}
		if g.exclude, err = topicPattern(props, name, topicGroupExclude); err != nil {
			errs = append(errs, err)
		}
		if v, ok, err := topicGroupInt(props, name, topicGroupReplicationFactor, 1<<15-1); err != nil {
			errs = append(errs, err)
		} else if ok {
			g.ReplicationFactor = int16(v)
		}
		if v, ok, err := topicGroupInt(props, name, topicGroupPartitions, 1<<31-1); err != nil {
			errs = append(errs, err)
		} else if ok {
			g.Partitions = int32(v)
		}
		c.Groups = append(c.Groups, g)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

func topicGroupKey(group, setting string) string { return TopicCreationPrefix + group + "." + setting }

// settingError is a problem with one topic creation setting, so that
// validation can show it on its key.
type settingError struct {
	key string
	err error
}

func (e *settingError) Error() string { return e.err.Error() }
func (e *settingError) Unwrap() error { return e.err }

// ValidateTopicCreation is ParseTopicCreation for connector validation:
// the problems of a source connector's topic.creation.* settings, by key.
// topic.creation.groups itself is left to the connector config's own
// definition, which checks its list.
func ValidateTopicCreation(props map[string]string) map[string][]string {
	_, errs := parseTopicCreation(props)
	var out map[string][]string
	for _, err := range errs {
		var se *settingError
		if errors.As(err, &se) && se.key != KeyTopicCreationGroups {
			if out == nil {
				out = map[string][]string{}
			}
			out[se.key] = append(out[se.key], se.Error())
		}
	}
	return out
}

func missingSetting(group, setting string) error {
	key := topicGroupKey(group, setting)
	return &settingError{key, fmt.Errorf("missing required configuration %q which has no default value", key)}
}

// topicGroupInt reads a group's replication factor or partitions: -1 or
// from 1 to hi; ok says it is set.
func topicGroupInt(props map[string]string, group, setting string, hi int64) (v int64, ok bool, err error) {
	key := topicGroupKey(group, setting)
	raw, set := props[key]
	if raw = strings.TrimSpace(raw); !set || raw == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseInt(raw, 10, 64)
	if err != nil || v != -1 && (v < 1 || v > hi) {
		return 0, false, &settingError{key, fmt.Errorf("invalid value %s for configuration %s: value must be -1 or from 1 to %d", raw, key, hi)}
	}
	return v, true, nil
}

// topicPattern compiles a group's include or exclude list into one
// expression matching whole topic names; nil for an empty list.
func topicPattern(props map[string]string, group, setting string) (*regexp.Regexp, error) {
	list := configList(props[topicGroupKey(group, setting)])
	if len(list) == 0 {
		return nil, nil
	}
	re, err := regexp.Compile(`^(?:` + strings.Join(list, "|") + `)$`)
	if err != nil {
		key := topicGroupKey(group, setting)
		return nil, &settingError{key, fmt.Errorf("invalid value for configuration %s: %w", key, err)}
	}
	return re, nil
}

// topicGroupConfigs returns a group's topic configs: its settings other
// than include, exclude, replication factor and partitions.
func topicGroupConfigs(props map[string]string, group string) map[string]string {
	prefix := TopicCreationPrefix + group + "."
	out := map[string]string{}
	for k, v := range props {
		name, ok := strings.CutPrefix(k, prefix)
		if !ok || name == "" {
			continue
		}
		switch name {
		case topicGroupInclude, topicGroupExclude, topicGroupReplicationFactor, topicGroupPartitions:
			continue
		}
		out[name] = v
	}
	return out
}

// configList splits a LIST setting: comma-separated, each item trimmed; an
// empty value is the empty list.
func configList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	items := strings.Split(v, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// adminClient returns the task's admin client for topic creation, made
// from TopicCreation.AdminOpts when the task first checks a topic: a task
// that never writes a record opens no admin connection. The run closes it
// (closeAdmin) when it ends. Task goroutine only.
func (t *sourceTask) adminClient() (*kgo.Client, error) {
	if t.admin != nil {
		return t.admin, nil
	}
	opts := append([]kgo.Opt{kgo.ClientID("connector-adminclient-" + t.cfg.ID.String())}, t.cfg.TopicCreation.AdminOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("source task %s: create topic creation admin client: %w", t.cfg.ID, err)
	}
	t.admin = cl
	return cl, nil
}

// closeAdmin closes the admin client, if the task made one; run calls it
// once the loop and the drain are over.
func (t *sourceTask) closeAdmin() {
	if t.admin != nil {
		t.admin.Close()
		t.admin = nil
	}
}

// ensureTopic makes sure topic exists before the task first writes to it,
// creating it with the settings of its topic creation group, as Kafka
// Connect does before a source task's first send to a topic. Topics once
// found or created are not looked up again. A failure Kafka may get over
// (no answer, a timeout, a retriable error code) is tried again after
// pollRetryBackoff until it works or the task stops or fails (errStopped);
// any other, such as a refused authorization or an invalid replication
// factor, fails the task. Task goroutine only.
func (t *sourceTask) ensureTopic(ctx context.Context, topic string) error {
	if _, ok := t.created[topic]; ok {
		t.lastTopic = topic
		return nil
	}
	admin, err := t.adminClient()
	if err != nil {
		return err
	}
	for {
		err := t.createTopic(ctx, admin, topic)
		if err == nil {
			t.created[topic] = struct{}{}
			t.lastTopic = topic
			return nil
		}
		if _, stopping, failure := t.snapshot(); stopping || failure != nil || ctx.Err() != nil {
			return errStopped
		}
		var ke *kerr.Error
		if errors.As(err, &ke) && !ke.Retriable {
			return fmt.Errorf("%w; make sure that the task may create topics or that the topic exists, and restart the task", err)
		}
		t.log.Warn("could not make sure the topic exists; will retry", "topic", topic, "error", err)
		t.flushIfDue(ctx)
		t.wait(ctx, pollRetryBackoff, false)
	}
}

// createTopic looks topic up with admin and creates it when it does not
// exist. A failure of the task interrupts it; Stop lets it finish (within
// the drain deadline), as it lets a Poll.
func (t *sourceTask) createTopic(ctx context.Context, admin *kgo.Client, topic string) error {
	ictx, done := t.interruptible(ctx, false, 0)
	defer done()
	cctx, cancel := context.WithTimeout(ictx, t.cfg.CallTimeout)
	defer cancel()
	// A metadata request of our own, which asks the broker not to create
	// the topic, as Kafka's admin client does, whatever the admin options
	// say: kgo's cached lookups (kadm's ListTopics) ask for the client's
	// AllowAutoTopicCreation, and a broker asked to would create the topic
	// with its own defaults before the connector's settings could.
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(cctx, admin)
	if err != nil {
		return fmt.Errorf("look up topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		switch err := kerr.ErrorForCode(rt.ErrorCode); {
		case err == nil:
			t.log.Info("topic exists; not creating it", "topic", topic)
			return nil
		case !errors.Is(err, kerr.UnknownTopicOrPartition):
			return fmt.Errorf("look up topic %s: %w", topic, err)
		}
	}
	g := t.cfg.TopicCreation.GroupFor(topic)
	var configs map[string]*string
	if len(g.Configs) > 0 {
		configs = make(map[string]*string, len(g.Configs))
		for k, v := range g.Configs {
			configs[k] = &v
		}
	}
	created, err := kadm.NewClient(admin).CreateTopic(cctx, g.Partitions, g.ReplicationFactor, configs, topic)
	if err == nil {
		err = created.Err
	}
	switch {
	case err == nil:
		t.log.Info("created topic", "topic", topic, "group", g.Name, "partitions", g.Partitions,
			"replication_factor", g.ReplicationFactor, "configs", g.Configs)
		return nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return nil
	}
	return fmt.Errorf("create topic %s (topic creation group %s: %d partitions, replication factor %d): %w",
		topic, g.Name, g.Partitions, g.ReplicationFactor, err)
}

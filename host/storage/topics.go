package storage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicSpec describes one internal topic: how to create it and what to say
// when an existing one is unfit.
type TopicSpec struct {
	// Name is the topic.
	Name string
	// Property is the worker property that named the topic
	// (config.storage.topic, ...); errors quote it.
	Property string
	// Purpose says what the topic keeps, for errors
	// ("connector configurations").
	Purpose string
	// Partitions for creation; -1 lets the broker choose (KIP-605).
	Partitions int32
	// ReplicationFactor for creation; -1 lets the broker choose.
	ReplicationFactor int16
	// Configs are extra topic configs for creation (from the worker's
	// config.storage.*, offset.storage.*, status.storage.* properties).
	// cleanup.policy is always compact whatever they say.
	Configs map[string]string
	// SinglePartition refuses a topic with more than one partition: the
	// config topic is a totally ordered log.
	SinglePartition bool
}

// InternalTopics are the three topics of a distributed worker.
type InternalTopics struct {
	Config, Offset, Status TopicSpec
}

// Kafka Connect's defaults for the internal topics (DistributedConfig).
const (
	DefaultOffsetPartitions  = 25
	DefaultStatusPartitions  = 5
	DefaultReplicationFactor = 3
)

// ConfigTopic describes the config topic: always one partition.
func ConfigTopic(name string, replication int16) TopicSpec {
	return TopicSpec{Name: name, Property: "config.storage.topic", Purpose: "connector configurations",
		Partitions: 1, ReplicationFactor: replication, SinglePartition: true}
}

// OffsetTopic describes the offsets topic.
func OffsetTopic(name string, partitions int32, replication int16) TopicSpec {
	return TopicSpec{Name: name, Property: "offset.storage.topic", Purpose: "source connector offsets",
		Partitions: partitions, ReplicationFactor: replication}
}

// StatusTopic describes the status topic.
func StatusTopic(name string, partitions int32, replication int16) TopicSpec {
	return TopicSpec{Name: name, Property: "status.storage.topic", Purpose: "connector and task statuses",
		Partitions: partitions, ReplicationFactor: replication}
}

// DefaultInternalTopics describes the three topics with Kafka Connect's
// default partition counts and replication factors.
func DefaultInternalTopics(config, offset, status string) InternalTopics {
	return InternalTopics{
		Config: ConfigTopic(config, DefaultReplicationFactor),
		Offset: OffsetTopic(offset, DefaultOffsetPartitions, DefaultReplicationFactor),
		Status: StatusTopic(status, DefaultStatusPartitions, DefaultReplicationFactor),
	}
}

// ErrTopicUnfit is wrapped by the errors EnsureTopic returns for an existing
// topic the worker must not use (not compacted, or a config topic with more
// than one partition). The worker refuses to start on it.
var ErrTopicUnfit = errors.New("internal topic unfit")

// EnsureTopics creates the three internal topics when missing and checks
// existing ones (EnsureTopic).
func EnsureTopics(ctx context.Context, adm *kadm.Client, topics InternalTopics, logger hclog.Logger) error {
	for _, spec := range []TopicSpec{topics.Config, topics.Offset, topics.Status} {
		if err := EnsureTopic(ctx, adm, spec, logger); err != nil {
			return err
		}
	}
	return nil
}

// EnsureTopic creates the topic with cleanup.policy=compact when it is
// missing, then checks it: a topic whose cleanup.policy is anything but
// exactly "compact" ("delete", "compact,delete") is refused, and so is a
// single-partition topic with more partitions. When the broker will not
// describe the topic's configs (ACLs, old broker) the policy check is skipped,
// as Kafka Connect does. Metadata lag after creation is retried until ctx ends.
func EnsureTopic(ctx context.Context, adm *kadm.Client, spec TopicSpec, logger hclog.Logger) error {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if spec.Name == "" {
		return fmt.Errorf("internal topic: %s is empty", spec.Property)
	}
	exists, partitions, err := describePartitions(ctx, adm, spec.Name)
	if err != nil {
		return fmt.Errorf("describe topic %s: %w", spec.Name, err)
	}
	if !exists {
		created, n, err := createTopic(ctx, adm, spec, logger)
		if err != nil {
			return err
		}
		if created && n > 0 {
			// Created here, compacted as asked: nothing to verify (Kafka
			// Connect verifies only topics that already existed).
			return nil
		}
		// Another worker created it first, or the broker did not say how
		// many partitions it made; metadata may lag behind the creation.
		if partitions, err = waitForTopic(ctx, adm, spec.Name); err != nil {
			return fmt.Errorf("wait for created topic %s: %w", spec.Name, err)
		}
		if created {
			return nil
		}
	}
	if spec.SinglePartition && partitions > 1 {
		return fmt.Errorf("%w: Topic '%s' supplied via the '%s' property is required to have a single partition in order to guarantee consistency of %s, but found %d partitions.",
			ErrTopicUnfit, spec.Name, spec.Property, spec.Purpose, partitions)
	}
	return checkCompacted(ctx, adm, spec, logger)
}

// describePartitions reports whether the topic exists and its partition count.
// kadm answers metadata from the client's cache (franz-go keeps it for its
// metadata min age, 5 s by default), which would report a topic created a
// moment ago as missing; asking for authorized operations makes kadm send a
// fresh request.
func describePartitions(ctx context.Context, adm *kadm.Client, topic string) (bool, int, error) {
	details, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), topic)
	if err != nil {
		return false, 0, err
	}
	d, ok := details[topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return false, 0, nil
	}
	if d.Err != nil {
		return false, 0, d.Err
	}
	return true, len(d.Partitions), nil
}

// createTopic creates the topic; created is false when another worker (or
// the broker's auto-creation) made it first, or when this worker may not
// create topics and must hope it exists.
func createTopic(ctx context.Context, adm *kadm.Client, spec TopicSpec, logger hclog.Logger) (created bool, partitions int32, err error) {
	configs := make(map[string]*string, len(spec.Configs)+1)
	for _, k := range slices.Sorted(maps.Keys(spec.Configs)) {
		v := spec.Configs[k]
		configs[k] = &v
	}
	compact := "compact"
	configs["cleanup.policy"] = &compact
	n := spec.Partitions
	if spec.SinglePartition {
		n = 1
	}
	resp, err := adm.CreateTopic(ctx, n, spec.ReplicationFactor, configs, spec.Name)
	switch {
	case err == nil:
		logger.Info("created internal topic", "topic", spec.Name, "partitions", resp.NumPartitions,
			"replication_factor", resp.ReplicationFactor)
		return true, resp.NumPartitions, nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return false, 0, nil // another worker won the race
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed):
		// Kafka Connect carries on and lets the checks (or the first read)
		// find out whether the topic is there.
		logger.Warn("not authorized to create internal topic; assuming it exists or will be created",
			"topic", spec.Name, "error", err)
		return false, 0, nil
	default:
		if resp.ErrMessage != "" {
			return false, 0, fmt.Errorf("create topic %s: %w: %s", spec.Name, err, resp.ErrMessage)
		}
		return false, 0, fmt.Errorf("create topic %s: %w", spec.Name, err)
	}
}

// waitForTopic waits until metadata shows the topic with its partitions.
func waitForTopic(ctx context.Context, adm *kadm.Client, topic string) (int, error) {
	backoff := 50 * time.Millisecond
	for {
		exists, n, err := describePartitions(ctx, adm, topic)
		if err == nil && exists && n > 0 {
			return n, nil
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			if err != nil {
				return 0, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
			}
			return 0, ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// checkCompacted refuses a topic whose cleanup.policy is not exactly compact.
func checkCompacted(ctx context.Context, adm *kadm.Client, spec TopicSpec, logger hclog.Logger) error {
	rcs, err := adm.DescribeTopicConfigs(ctx, spec.Name)
	if err == nil {
		var rc kadm.ResourceConfig
		rc, err = rcs.On(spec.Name, nil)
		if err == nil {
			err = rc.Err
		}
		if err == nil {
			return checkPolicy(spec, rc.Configs, logger)
		}
	}
	if errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) ||
		errors.Is(err, kerr.UnsupportedVersion) || errors.Is(err, kerr.UnknownServerError) {
		logger.Info("cannot describe the internal topic's configs; not verifying its cleanup.policy",
			"topic", spec.Name, "error", err)
		return nil
	}
	return fmt.Errorf("describe configs of topic %s: %w", spec.Name, err)
}

func checkPolicy(spec TopicSpec, configs []kadm.Config, logger hclog.Logger) error {
	for _, c := range configs {
		if c.Key != "cleanup.policy" {
			continue
		}
		if c.Value == nil {
			break
		}
		policies := map[string]bool{}
		for _, p := range strings.Split(*c.Value, ",") {
			if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
				policies[p] = true
			}
		}
		if len(policies) == 0 {
			break
		}
		if len(policies) == 1 && policies["compact"] {
			return nil
		}
		return fmt.Errorf("%w: Topic '%s' supplied via the '%s' property is required to have 'cleanup.policy=compact' to guarantee consistency and durability of %s, but found the topic currently has 'cleanup.policy=%s'. Continuing would likely result in eventually losing %s and problems restarting this Connect cluster in the future. Change the '%s' property in the Connect worker configurations to use a topic with 'cleanup.policy=compact'.",
			ErrTopicUnfit, spec.Name, spec.Property, spec.Purpose, *c.Value, spec.Purpose, spec.Property)
	}
	if logger != nil {
		logger.Info("the broker did not report the internal topic's cleanup.policy; not verifying it", "topic", spec.Name)
	}
	return nil
}

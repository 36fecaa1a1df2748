package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-io/sluice/host/herder"
)

// consumerGroups implements herder.ConsumerGroups with kadm: the sink
// connectors' offsets are their consumer groups' committed offsets.
type consumerGroups struct{ adm *kadm.Client }

var _ herder.ConsumerGroups = consumerGroups{}

func (g consumerGroups) Offsets(ctx context.Context, group string) (map[string]map[int32]int64, error) {
	resp, err := g.adm.FetchOffsets(ctx, group)
	if err == nil {
		err = resp.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[string]map[int32]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.At < 0 {
			return
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.At
	})
	return out, nil
}

func (g consumerGroups) HasMembers(ctx context.Context, group string) (bool, error) {
	ds, err := g.adm.DescribeGroups(ctx, group)
	if err != nil {
		return false, err
	}
	d, ok := ds[group]
	if !ok {
		return false, nil
	}
	if d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
		return false, d.Err
	}
	return len(d.Members) > 0, nil
}

func (g consumerGroups) Alter(ctx context.Context, group string, set map[string]map[int32]int64, reset map[string][]int32) error {
	if len(set) > 0 {
		os := kadm.Offsets{}
		for t, ps := range set {
			for p, at := range ps {
				os.Add(kadm.Offset{Topic: t, Partition: p, At: at, LeaderEpoch: -1})
			}
		}
		resp, err := g.adm.CommitOffsets(ctx, group, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("commit offsets: %w", err)
		}
	}
	if len(reset) > 0 {
		ts := kadm.TopicsSet{}
		for t, ps := range reset {
			ts.Add(t, ps...)
		}
		resp, err := g.adm.DeleteOffsets(ctx, group, ts)
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return fmt.Errorf("delete offsets: %w", err)
		}
	}
	return nil
}

func (g consumerGroups) Delete(ctx context.Context, group string) error {
	resp, err := g.adm.DeleteGroups(ctx, group)
	if err != nil {
		return err
	}
	if r, ok := resp[group]; ok && r.Err != nil && !errors.Is(r.Err, kerr.GroupIDNotFound) {
		return r.Err
	}
	return nil
}

package herder

// Generation is the group generation the herder's member is in (-1 before
// Start): tests observe rebalances with it.
func Generation(d *Distributed) int32 { return d.memberStatus().Generation }

// MemberID is the herder's current group member id ("" out of the group).
func MemberID(d *Distributed) string { return d.memberStatus().MemberID }

// IsLeader reports whether the herder's member leads the group.
func IsLeader(d *Distributed) bool { return d.memberStatus().IsLeader }

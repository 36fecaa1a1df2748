package herder

// Generation is the group generation the herder's member is in (-1 before
// Start): tests observe rebalances with it.
func Generation(d *Distributed) int32 { return d.memberStatus().Generation }

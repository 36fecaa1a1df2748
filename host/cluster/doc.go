// Package cluster is a distributed worker's membership in its Connect
// cluster: Kafka Connect's group protocol on Kafka's own group coordinator,
// and the assignors (incremental cooperative, KIP-415, and eager) that
// decide which worker runs which connector and task. Java workers and Sluice workers can
// share a group: the bytes are Kafka Connect's.
//
// # Protocol
//
// Workers join the group named by group.id with protocol type "connect",
// offering the sub-protocols of connect.protocol in preference order, as
// Kafka Connect does: sessioned offers "sessioned" (version 2),
// "compatible" (1) and "default" (0); compatible offers "compatible" and
// "default"; eager offers "default" alone. The coordinator picks a
// protocol every member offers (the one most members prefer among those),
// so a group with one eager member runs "default" and goes back to the
// newer protocol when that member leaves. The protocol the coordinator picked decides the round: which
// assignor the leader runs, what members do before joining, and (in the
// herder) whether internal requests are signed. Compatible and sessioned
// are incremental cooperative; sessioned only adds the session key for
// signed internal REST requests (KIP-507), which is the herder's concern.
// Eager ("default") is stop-the-world: see below.
//
// Member metadata (JoinGroup) is: version, REST URL, config topic offset,
// and (version 1 and up) the worker's current assignment as nullable bytes.
// An assignment (SyncGroup) is: version, error (0, or 1 = CONFIG_MISMATCH),
// leader member id, leader URL, config offset, assigned [{connector,
// [task]}], and (version 1 and up) revoked [{connector, [task]}] and delay
// in ms; task -1 stands for the connector instance. Layouts are in
// protocol.go; decoding tolerates missing trailing fields and null arrays
// as Kafka Connect does. kmsg has ConnectMemberMetadata and
// ConnectMemberAssignment, but the latter writes task ids as INT16 where
// Kafka Connect writes INT32, so this package encodes both itself (a test
// notices if kmsg changes).
//
// Requests are kmsg messages sent through a kgo client, which finds the
// group's coordinator (FindCoordinator) and, on NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE, forgets it, finds the new one and retries: a
// coordinator move costs no rebalance.
//
// # Member state machine
//
// Run loops over five states on one goroutine; Handler callbacks run on it.
//
//	joining   After an eager round: OnRevoked with everything owned
//	          (heartbeats run meanwhile). Then JoinGroup; if it names
//	          "default", OnRevoked with anything still owned.
//	          MEMBER_ID_REQUIRED: join again with the id given.
//	          UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION / FENCED_INSTANCE_ID:
//	          the membership is gone (OnLost), join as a new member.
//	          REBALANCE_IN_PROGRESS: join again. Coordinator and network
//	          errors: back off (50 ms doubling to 1 s) and retry.
//	          INCONSISTENT_GROUP_PROTOCOL, INVALID_SESSION_TIMEOUT,
//	          authorization, GROUP_MAX_SIZE_REACHED: Run returns ErrFatal.
//	syncing   SyncGroup; the leader first runs the assignor on everyone's
//	          metadata and its own config snapshot. REBALANCE_IN_PROGRESS:
//	          back to joining; membership errors as above.
//	applying  OnRevoked (if anything is revoked), then OnAssigned.
//	          Heartbeats already run.
//	stable    Heartbeats every heartbeat.interval.ms. Back to joining when
//	          the coordinator answers REBALANCE_IN_PROGRESS, when the owner
//	          calls Rejoin, right after a round that revoked something (so
//	          the leader can hand it on; not under eager), when the
//	          leader's delay expires, or after a loss. To out when the
//	          owner called LeaveAndRejoinAfter (before any of those).
//	out       OnRevoked with everything owned, heartbeats still running
//	          (its context ends as before an eager JoinGroup: the group
//	          may rebalance meanwhile); then LeaveGroup, so the others rebalance at once; the member
//	          id and generation are dropped and heartbeats stop. After the
//	          wait (Rejoin does not shorten it; Leave and the end of Run's
//	          context do), joining as a new member; with
//	          LeaveAndRejoinWhen, only once the owner says it is ready,
//	          waiting again between tries. Not OnLost: the owner
//	          asked, and has stopped the work through OnRevoked.
//
// A round that repeats an already completed generation (a stable group
// answers a follower that rejoins unchanged with its current generation and
// assignment) changes nothing and calls nothing, except under eager: the
// member stopped everything before it joined, and the repeated assignment
// starts it again. Likewise after a loss under the kept member id: the
// coordinator repeats a generation only for the JoinGroup it had, which
// said (no current assignment) that the member ran nothing, so that round's
// increments are the member's whole share and start again.
//
// # No zombies
//
// The coordinator evicts a member it has not heard from for
// session.timeout.ms and may hand its work out right after. A member gives up
// earlier: when nothing has proved its membership alive (a heartbeat
// answered, a join or sync completed) for the session timeout less one
// heartbeat interval, it calls OnLost and joins again. The interval left is
// for the owner to stop its work before anyone else can start it. It joins
// under the member id it had, as Kafka's clients do: a coordinator that was
// only unreachable (a broker restarted, which reloads the group) may still
// know it, and then the group rebalances at once with the same members
// rather than after the old session expires, and the leader does not take
// the work the member ran for a departed worker's, held back for the
// scheduled delay. Only when the coordinator refused the membership
// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID), or refuses
// the old id at that JoinGroup, does it join as a new member. Leaving on
// request (LeaveAndRejoinAfter) always drops the id, since the LeaveGroup
// ended it. While a
// rebalance is under way (a JoinGroup can legitimately wait up to
// rebalance.timeout.ms) a member that owns work keeps heartbeating, which the
// coordinator allows, so a coordinator that vanished mid-rebalance is noticed
// in time too. Once JoinGroup answers, those heartbeats carry the new
// generation (the coordinator renews a session only on heartbeats of the
// current one), which keeps a member that stops its work before SyncGroup
// (see Eager) in the group however long the stop takes within the
// rebalance timeout. A member that stays in a callback longer than the rebalance
// timeout while the group rebalances is dropped by the coordinator; it learns
// so from its heartbeats and reports OnLost when the callback returns.
//
// # Assignor
//
// The leader computes each round from: every member's URL, config offset
// and current work; its config snapshot (connectors and task counts); what it
// remembers of its own previous round; its clock; and
// scheduled.rebalance.max.delay.ms. It follows Kafka Connect's
// IncrementalCooperativeAssignor:
//
//   - A leader behind the newest member's config offset assigns nothing:
//     everyone gets CONFIG_MISMATCH and the newest offset, catches up and
//     rejoins.
//   - Configured work nobody runs and nobody lost is new. Work that is no
//     longer configured is revoked where it runs (Kafka Connect only looks at
//     what the leader last assigned; a new leader here also stops deleted
//     work it never assigned). Work run by two members is revoked from both.
//   - Work the previous round assigned to a worker that is gone is lost. If
//     every previous member is still here, it is new again (someone missed
//     an assignment). Otherwise it waits: the delay starts at the max delay
//     and every member is told how much is left; when it has passed, the lost
//     work goes round-robin to workers that stood empty during the wait
//     (likely the departed ones, back), or, with none, to the least loaded.
//     A max delay of 0 reassigns at once. A new leader remembers nothing, so
//     lost work is new to it.
//   - Only when no delay is pending, workers above their share give work up:
//     with T items on N workers each gets ⌊T/N⌋ and T mod N of them one
//     more, workers already above the floor keeping the extra ones first;
//     connectors and tasks are balanced separately, so at rest
//     max − min < 2 for each. A revocation is never assigned in the same
//     round: the revoking worker rejoins and the next round places it. Two
//     revoking rounds back to back make the leader wait 40^n ms (capped at
//     the max delay) before revoking again.
//   - New and released work goes to the least loaded workers first, level
//     by level.
//   - Each member is told only its increments (assigned, revoked), the
//     delay, the leader and its URL, and the config offset assigned from.
//
// # Eager
//
// When the group runs "default", a member stops everything it runs before
// every JoinGroup (OnRevoked with all its work; Kafka Connect's
// onJoinPrepare; its context ends when the member must join to make the
// round, the rebalance timeout less three heartbeat intervals, and a stop
// past that is logged), and the leader runs AssignEager, Kafka Connect's
// EagerAssignor: no memory, no delays, no revocations; connectors in name
// order round-robin over the members in id order, then every connector's
// tasks continuing the same round-robin. A leader behind the newest
// member's config offset gives everyone CONFIG_MISMATCH, as above. Each
// member is told all it is to run. "Before every JoinGroup" follows the
// protocol of the last completed round, as Kafka Connect's does: a
// sessioned worker that ran an eager round stops everything before its next
// join too. One whose last round was cooperative keeps its work into the
// join; Sluice has it stop everything as soon as the JoinGroup answer names
// "default", before its SyncGroup (Kafka Connect does not: it keeps that
// work running into the eager round). The leader's SyncGroup is what
// releases every member's assignment, so a leader in that position has
// stopped before anyone starts; a follower stops as early as it can, but
// may overlap for that long with whoever is given its work, since version 0
// metadata does not say what a member runs. The downgrade is for rolling
// changes of connect.protocol, not a steady state. A member that leaves
// for a while (LeaveAndRejoinAfter) stops everything before its LeaveGroup,
// so it owns nothing at the JoinGroup that ends its wait either.
//
// # What the distributed herder does with it
//
// ConfigSnapshot returns the config topic as read so far, from memory.
// OnRevoked stops the revoked work before returning. OnAssigned: with
// Error == ConfigMismatch, read the config topic to the end before returning
// (the member rejoins right after; under eager the read is bounded by
// worker.sync.timeout.ms, and a worker that fails it leaves as below, since
// nothing runs in the group until a round with every member's JoinGroup
// succeeds; a follower already at a.ConfigOffset does not read, as in Kafka
// Connect); when the local config offset is behind a.ConfigOffset, read up
// to it (worker.sync.timeout.ms); otherwise start a.Added. If that read
// fails, the worker answers 409 for what needs a current config until a
// round succeeds, and:
//
//   - under the cooperative protocols it keeps the work it ran, holds back
//     a.Added and calls Rejoin: at once the first time, then after a wait of
//     one second doubling up to worker.unsync.backoff.ms. It stays in the
//     group, so what it runs keeps running;
//   - under eager it has stopped everything before the round and a.Added is
//     its whole assignment, which would run nowhere while it waits. So it
//     calls LeaveAndRejoinWhen, as Kafka Connect's herder leaves the group
//     and backs off: the others take its work over at once. After one
//     second, doubling up to worker.unsync.backoff.ms (Kafka Connect waits
//     the whole backoff every time; the herder's eagerUnsyncBackoff says
//     why Sluice does not), it reads the config topic again
//     (worker.sync.timeout.ms), and joins again as a new member only if
//     that succeeds, as Kafka Connect's does.
//
// Under eager, OnRevoked before each JoinGroup stops everything, and a.Added
// is the whole assignment; internal requests are not signed
// (Assignment.Protocol says which protocol the round ran).
// OnLost stops everything at once; until the next OnAssigned no leader is
// known, and requests for the leader wait for one (at their deadline REST
// answers 500, "The worker is currently ensuring membership in the
// cluster", as Kafka Connect's blocked herder thread does). A config change that needs a rebalance
// (connector created or deleted, task configs committed) calls Rejoin.
// Status tells whether a rebalance is under way (REST answers 409 then) and
// who leads (LeaderURL is where to forward leader-only requests);
// LeaderPlan, on the leader, says which worker runs a given connector or
// task. To shut down: stop the work, then Leave, so the others rebalance at
// once rather than after the session timeout. After a loss Leave does so for
// the member id kept to rejoin under (Status shows none), giving up after
// the session timeout should the coordinator still be silent.
package cluster

// Package herder decides what runs on a worker and answers for it: it holds
// connector configurations and target states, starts connector and task
// instances (each a plugin process, through host/plugin and host/runtime),
// tracks their statuses, and applies restarts, pauses, stops and config
// changes. Herder is the interface the REST API uses; the standalone herder
// keeps state in memory (offsets in a file), the distributed one on Kafka.
//
// # Standalone herder
//
// Standalone keeps each connector's config exactly as submitted (plus
// "name"); nothing is resolved or added, so PASSWORD values and
// ${provider:path:key} placeholders come back as written. It does not launch
// anything itself: Instances (host/worker) launches connector processes and
// task runners, so tests drive the herder with fakes.
//
// A connector's life, by target state:
//
//	STARTED  connector process started (Start), TaskConfigs(tasks.max), one
//	         task runner per config (task.class added; sinks also get topics
//	         / topics.regex); status RUNNING
//	PAUSED   the same processes, idle: runners paused, status PAUSED
//	STOPPED  no process at all, task configs dropped; status STOPPED, no tasks
//
// A config update stops the tasks and the connector and starts both afresh.
// A connector's RequestTaskReconfiguration re-reads TaskConfigs and replaces
// the tasks only when the configs changed; RaiseError, a crash of the
// connector's process or a failing TaskConfigs make the connector FAILED
// with the error as trace. A task that fails (a plugin crash included) stays
// FAILED with its trace until it is restarted; a restart starts a fresh
// runner, hence a fresh process resuming from committed offsets. Restarts
// follow KIP-745: the plain restart touches the connector instance only;
// includeTasks / onlyFailed build a plan (the instances to restart shown
// RESTARTING) and carry it out.
//
// Beyond Kafka Connect, a connector may ask for its failed tasks to be
// restarted automatically (sluice.task.restart.enable, off by default):
// after sluice.task.restart.backoff.initial.ms, doubled for each restart in
// a row up to sluice.task.restart.backoff.max.ms, at most
// sluice.task.restart.max.attempts times in a row (-1: no limit); a task
// that ran for the maximum backoff before failing counts afresh. A restart
// by hand, a reconfiguration, a stop or a delete during the wait wins: the
// automatic restart then finds the task replaced and does nothing. In
// distributed mode the task's owner restarts it with the same backoff; a
// rebalance that moves the task, or a pause, drops the pending restart.
//
// Concurrency. The connector map has its own short lock. Each connector has
// an operation slot, held for the whole of a lifecycle change, plugin calls
// included, and a mutex for its fields that is never held across a call.
// Operations run on goroutines of the herder, not of the request: a request
// whose context ends returns at once (host/rest answers 500 with Stage()),
// and the operation completes on its own. So a plugin that hangs delays only
// requests that must change its own connector; validation takes no lock.
//
// Validation merges, as Kafka's AbstractHerder does, the framework's common
// connector settings (FrameworkDef: Common, Transforms, Predicates, Error
// Handling, and for sources Topic Creation, Exactly Once Support,
// offsets.topic, and Sluice's automatic restart and source dead letter
// queue settings), the per-alias transform and predicate settings (checked
// as a whole by the catalog when it is a TransformValidator), the sink
// topic rules, the converter checks and the client override policy with the
// connector plugin's own Validate answer, into one ConfigInfos.
//
// # Distributed herder
//
// Distributed keeps connector configs, task configs, target states and
// restart requests on the config topic, statuses on the status topic and
// source offsets on the offsets topic (host/storage); host/cluster decides
// which worker runs which connector instance and which task. It reuses a
// Standalone that holds no connector for validation, plugin listings and
// the offsets endpoints. Reads (configs, task configs, statuses, offsets)
// are answered by any worker from its copy of the topics, so every worker
// answers the same. Writes that need a single writer (create, update,
// delete, stop, task configs, offset changes) run on the leader; a follower
// forwards them to the leader's advertised URL with the forward query
// parameter (distributed_forward.go). Pause and resume are target-state
// records any worker writes; restarts are restart-connector records the
// owners act on, and a task restart is forwarded to the task's owner
// through the leader. Under the sessioned protocol the internal task-config
// request is signed (KIP-507, signing.go and sessionkey.go): the leader
// writes and rotates the session key, the sender signs the body bytes, the
// receiver checks the signature before anything else, and a follower
// forwards a signed request unchanged. What counts is the protocol the
// group ran in the last round, not connect.protocol: under compatible and
// eager (a sessioned worker in a group with an older one runs the older
// protocol) nothing is signed or checked. While a config change waits for its
// rebalance, configuration reads and restarts answer 409 (stale
// configuration); with no known leader during a rebalance, forwarded writes
// answer 409 (no known leader URL). With the membership lost (the
// coordinator unreachable) they wait for the group instead, as Kafka
// Connect's herder thread does while it rejoins, and at the request's
// deadline answer 500 naming the stage "ensuring membership in the
// cluster".
//
// A reconcile pass (distributed_work.go) makes what runs here match the
// assignment and the config topic: owned connectors run unless STOPPED
// (a config change restarts them) and, once started or when they ask,
// generate task configs that the leader writes when they differ from the
// committed ones or the connector config changed since; owned tasks run
// with their committed configs and restart when their connector's task
// configs are committed again. Revoked work stops (tasks drain) before
// OnRevoked returns (under the eager protocol the group revokes everything
// before each join, and the next assignment starts it all again); OnLost cancels every task runner at once and writes
// nothing. Statuses carry the group generation and are written in order
// by one goroutine, so plugin callbacks never wait for Kafka.
package herder

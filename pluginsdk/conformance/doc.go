// Package conformance checks that a plugin binary — written in any
// language — keeps the Sluice plugin contract (proto/sluice/plugin/v1). It
// launches the binary the way the worker does (go-plugin, gRPC, the magic
// cookie, a bare environment), serves a fake in-memory Worker service for
// its callbacks, and walks each class through its lifecycle:
//
//	describe        handshake; classes, types, versions; config definitions
//	                well-formed (unique names, types set, required keys without
//	                a default); a clean exit on Kill
//	<class>/validate    the valid config gets no errors, the invalid one gets
//	                    errors on the keys the options name
//	<class>/connector   Start, TaskConfigs for 1..3 tasks, Stop, clean exit
//	<class>/source-task Start, Poll until N records (sequence numbers, decodable
//	                    schemas, JSON partitions and offsets), Ack, Commit, Stop
//	                    while a Poll is outstanding, clean exit
//	<class>/source-resume  a second process, given the offsets the first one
//	                    reached, does not repeat them
//	<class>/sink-task   Start, Open, Put, PreCommit (offsets no further than
//	                    delivered), Close, Stop, clean exit
//
// Go authors call Run from a test; others run the sluice-conformance command
// (cmd/sluice-conformance) with a JSON options file. The package never
// imports the worker (host/): it speaks only the contract.
package conformance

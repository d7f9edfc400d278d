// Package core is what imd does, apart from any technology: the domain and what is built on it
// from ports. Its folders say what kind of package each is; architecture_test.go holds the
// import rules of each kind (and docs/ARCHITECTURE.md has one line per package):
//
//   - core/domain/<noun> is what the domain is: messages, seq and month rules, routes, deliver
//     jobs, the social graph, object keys. Values and pure functions that import only the
//     standard library and each other, so ports can speak in their types.
//   - core/kit/<name> holds small generic helpers (one load per key, the periodic pass, one
//     goroutine from Start to Stop, operator jobs, this node's sends in flight): standard
//     library and domain only.
//   - core/store/<name> decorates ports with ports (archived months behind the month tables,
//     the legacy table merged in during a migration, the member cache): what it serves is a
//     store to its callers; it imports ports, domain and kits.
//   - core/usecase/<name> is what a request does, a client's or an operator's: send, history,
//     read, directory, admin, … A use case imports another only where the test lists the
//     dependency with its reason.
//   - core/loop/<name> is background work core/runtime runs for each tenant or for the node:
//     deliver, shard manager, retention, route repair, migration, cluster, … A loop may call use
//     cases; no use case calls a loop but the two the test lists (the shard manager owns the
//     month lifecycle that an operator's advance and an archive change).
//
// core/runtime and core/simulation stay at the top because they compose the kinds rather than
// being one: the runtime imports the loops to start, restart and stop them, and the simulation
// (tests only) runs the whole core on the memory fakes. Core imports only the standard library,
// imd/ports and core itself (boundary_test.go).
package core

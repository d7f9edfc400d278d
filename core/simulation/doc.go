// Package simulation is the deterministic simulation of the core (issue 18): it runs the real
// use cases (send, deliver, sync, read, the shard manager, route repair) of several simulated
// nodes over the in-memory fakes, with a simulated clock and a seeded random schedule of client
// actions and faults — crashes between port calls, Redis lost or rolled back, outages, slow
// devices — and checks the invariants of seeds 003 §20 and 000 §12 after every step.
//
// It lives under core, as a package of test files only, because it is a test of the core:
// core tests may use adapters/memory (core/boundary_test.go), no production code imports it,
// and the fixed top level (cmd core ports adapters sql deploy e2e docs) has no other home for
// tests that span many core packages without real services. This file holds no code, so the
// package adds nothing to any build but its own tests.
//
// go test ./core/simulation runs a few seeds (see the -sim.* flags); go tool task sim runs
// random seeds until stopped.
package simulation

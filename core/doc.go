// Package core is the pure domain of imd: messages, seq and month rules, routing, delivery
// rules and the use cases. It imports only the standard library, imd/ports and other core
// packages; boundary_test.go enforces that.
package core

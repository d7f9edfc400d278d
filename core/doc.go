// Package core is the pure domain of imd. core/domain holds what the domain is — messages,
// seq and month rules, routes, deliver jobs, the social graph — as leaf packages that import
// only the standard library and each other, so ports can speak in their types. The packages
// beside it are what the domain does: one use case each (send, deliver, history, …), built
// from ports. Core imports only the standard library, imd/ports and other core packages;
// boundary_test.go enforces that, architecture_test.go the leaf rule of core/domain and that
// docs/ARCHITECTURE.md maps every package.
package core

// Package adapters holds one package per technology, each implementing ports for the core or
// driving it (listeners). Adapters do not import each other: cmd/imd wires them together
// through ports or small interfaces the consumer declares (cmd/imd/ports.go names the adapter
// behind each port). The only shared vocabulary is adapters/protocol (transport-neutral);
// tests may also use the memory fakes. imports_test.go enforces that. Of core, an adapter
// that implements ports imports only core/domain; only the drivers (config and the listeners)
// call use cases and loops (core_imports_test.go).
package adapters

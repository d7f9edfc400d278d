package memory

// stateOf is the tenant's entry of a fake's state, made by fresh on first use, as a tenant's
// keys and rows come into being with its first write; the caller holds the fake's lock.
func stateOf[T any](states map[string]*T, tenant string, fresh func() *T) *T {
	s, ok := states[tenant]
	if !ok {
		s = fresh()
		states[tenant] = s
	}
	return s
}

package memory

// stateOf is the tenant's entry of a fake's state, made by fresh on first use, as a tenant's
// keys and rows come into being with its first write; the caller holds the fake's lock.
func stateOf[K comparable, T any](states map[K]*T, tenant K, fresh func() *T) *T {
	s, ok := states[tenant]
	if !ok {
		s = fresh()
		states[tenant] = s
	}
	return s
}

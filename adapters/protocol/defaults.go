package protocol

import "time"

// Default sets *v to def unless it is positive: the settings of the transports and the
// dispatcher take zero (and nonsense below it) for "use the default".
func Default[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

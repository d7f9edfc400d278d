package client

// maxAbove bounds the seqs a topic remembers above its floor. Holes below them
// (a message this user deleted, a send that failed after taking a seq) never
// fill, so the set is trimmed from below once it is this large: a push that
// comes later than that many newer messages is not expected.
const maxAbove = 4096

// topicSeen says which seqs of one topic the user has been given (or sent):
// every seq ≤ floor, and the ones in above. floor only moves over seqs known
// to be handled, so a late push below a hole is still delivered.
type topicSeen struct {
	floor      int64
	floorKnown bool // false until a catch-up or a saved State fixed where history starts
	above      map[int64]struct{}
}

// add records seq and reports whether it was new.
func (t *topicSeen) add(seq int64) bool {
	if seq <= t.floor && t.floorKnown {
		return false
	}
	if _, dup := t.above[seq]; dup {
		return false
	}
	if t.above == nil {
		t.above = make(map[int64]struct{})
	}
	t.above[seq] = struct{}{}
	t.advance()
	return true
}

// has reports whether seq was recorded.
func (t *topicSeen) has(seq int64) bool {
	if seq <= t.floor && t.floorKnown {
		return true
	}
	_, ok := t.above[seq]
	return ok
}

// setFloor declares every seq ≤ floor handled (history the user does not
// want replayed, or a saved position).
func (t *topicSeen) setFloor(floor int64) {
	if t.floorKnown && floor <= t.floor {
		return
	}
	t.floor, t.floorKnown = floor, true
	for seq := range t.above {
		if seq <= floor {
			delete(t.above, seq)
		}
	}
	t.advance()
}

// advance trims the set to maxAbove, fixing the floor at the smallest seq it
// drops, and moves a known floor over the contiguous seqs above it.
func (t *topicSeen) advance() {
	for len(t.above) > maxAbove {
		low := int64(-1)
		for seq := range t.above {
			if low < 0 || seq < low {
				low = seq
			}
		}
		t.floor, t.floorKnown = low, true
		delete(t.above, low)
	}
	if !t.floorKnown {
		return
	}
	for {
		if _, ok := t.above[t.floor+1]; !ok {
			return
		}
		delete(t.above, t.floor+1)
		t.floor++
	}
}

// high is the largest seq recorded.
func (t *topicSeen) high() int64 {
	h := t.floor
	for seq := range t.above {
		h = max(h, seq)
	}
	return h
}

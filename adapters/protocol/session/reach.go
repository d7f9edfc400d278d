package session

import (
	"context"
	"encoding/binary"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/core/domain/delivery"
)

// reach collects who a push did not reach; a nil *reach collects nothing, so Push pays nothing
// for it.
type reach struct {
	failedOn  []delivery.Device
	offlineOf []int64
}

func (m *reach) failed(user int64, c *Conn) {
	if m != nil {
		m.failedOn = append(m.failedOn, delivery.Device{User: user, Device: c.Identity().Device})
	}
}

func (m *reach) offline(user int64) {
	if m != nil {
		m.offlineOf = append(m.offlineOf, user)
	}
}

// PushReach is Push of several pushes that also names, per push, the connected devices that
// did not take the frame and the recipients without a connected device (ports.DevicePusher),
// so the deliver worker can write MISSED_MESSAGE rows and notify. A connection gets the frames
// of all the pushes in one write.
func (r *Registry) PushReach(ctx context.Context, tenant string, pushes ...delivery.Addressed) []delivery.Outcome {
	miss := make([]reach, len(pushes))
	reps := r.push(ctx, tenant, pushes, miss)
	out := make([]delivery.Outcome, len(pushes))
	for i, rep := range reps {
		out[i] = delivery.Outcome{Report: rep, FailedDevices: miss[i].failedOn, OfflineUsers: miss[i].offlineOf}
	}
	return out
}

// PushDevice writes p to one connected device of user, or to all of them for device 0, and
// returns how many took it. It is meant for EVENT pushes of mailbox rows, which are not
// tracked for PUSH_ACK: the row is their delivery.
func (r *Registry) PushDevice(ctx context.Context, tenant string, user int64, device uint64, p delivery.Push) int {
	if r.stopped.Load() {
		return 0
	}
	sh := r.shard(user)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	var (
		encoded []byte
		took    int
	)
	for _, c := range sh.users[userKey{tenant, user}] {
		if device != 0 && c.Identity().Device != device {
			continue
		}
		if encoded == nil {
			var err error
			if encoded, err = r.encode(p); err != nil {
				r.log.ErrorContext(ctx, "push not encodable", "kind", p.Kind, "err", err)
				return 0
			}
		}
		header := make([]byte, frame.HeaderLen)
		copy(header, encoded[:frame.HeaderLen])
		binary.BigEndian.PutUint32(header[seqOffset:], c.nextPushSeq())
		if c.offer([][]byte{header, encoded[frame.HeaderLen:]}) == 1 {
			took++
		} else {
			r.metrics.Inc("outbound_drop_total")
		}
	}
	return took
}

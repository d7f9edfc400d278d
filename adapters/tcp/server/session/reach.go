package session

import (
	"context"
	"encoding/binary"

	"imd/adapters/tcp/frame"
	"imd/core/delivery"
	"imd/core/fanout"
)

// reach collects who a push did not reach; a nil *reach collects nothing, so Push pays nothing
// for it.
type reach struct {
	failedOn  []fanout.Device
	offlineOf []int64
}

func (m *reach) failed(user int64, c *Conn) {
	if m != nil {
		m.failedOn = append(m.failedOn, fanout.Device{User: user, Device: c.Identity().Device})
	}
}

func (m *reach) offline(user int64) {
	if m != nil {
		m.offlineOf = append(m.offlineOf, user)
	}
}

// PushReach is Push that also names the connected devices that did not take the frame and the
// recipients without a connected device (ports.DevicePusher), so the deliver worker can write
// MISSED_MESSAGE rows and notify.
func (r *Registry) PushReach(ctx context.Context, tenant string, t delivery.Target, p delivery.Push) fanout.Outcome {
	var m reach
	rep := r.push(ctx, tenant, t, p, &m)
	return fanout.Outcome{Report: rep, FailedDevices: m.failedOn, OfflineUsers: m.offlineOf}
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
		if c.offer(header, encoded[frame.HeaderLen:]) {
			took++
		} else {
			r.metrics.Inc("outbound_drop_total")
		}
	}
	return took
}

package session

import (
	"encoding/binary"

	"github.com/imdhq/imd/clients/go/frame"
)

// outbox gathers the push frames of one Registry.push per connection, so that each connection
// gets them in one write, in the order they were added.
type outbox struct {
	queues []connQueue
	index  map[*Conn]int // into queues
	slab   []byte        // headers are cut from it, a chunk at a time
}

// connQueue is what one connection gets.
type connQueue struct {
	conn   *Conn
	user   int64
	bufs   [][]byte // header, body pairs
	frames []queuedFrame
}

// queuedFrame is one frame of a connQueue.
type queuedFrame struct {
	push int    // index of the push it carries
	seq  uint32 // its sequence id on the connection
}

// headerChunk is how many headers one slab allocation holds.
const headerChunk = 256

// queue returns the index of c's queue, making it on c's first frame with room for frames
// frames (the pushes sharing a member list: a connection usually gets one of each).
func (o *outbox) queue(c *Conn, user int64, frames int) int {
	if o.index == nil {
		o.index = make(map[*Conn]int)
	}
	i, ok := o.index[c]
	if !ok {
		i = len(o.queues)
		o.index[c] = i
		o.queues = append(o.queues, connQueue{
			conn: c, user: user, bufs: make([][]byte, 0, 2*frames), frames: make([]queuedFrame, 0, frames),
		})
	}
	return i
}

// add queues on queue q the frame encoded (with sequence_id 0), numbered seq, on behalf of push.
func (o *outbox) add(q, push int, seq uint32, encoded []byte) {
	cq := &o.queues[q]
	cq.bufs = append(cq.bufs, o.header(encoded, seq), encoded[frame.HeaderLen:])
	cq.frames = append(cq.frames, queuedFrame{push: push, seq: seq})
}

// header copies the header of encoded with sequence id seq into the slab. A full slab is
// replaced, never grown, so the headers cut from it stay where they are.
func (o *outbox) header(encoded []byte, seq uint32) []byte {
	if cap(o.slab)-len(o.slab) < frame.HeaderLen {
		o.slab = make([]byte, 0, headerChunk*frame.HeaderLen)
	}
	start := len(o.slab)
	o.slab = append(o.slab, encoded[:frame.HeaderLen]...)
	h := o.slab[start:len(o.slab):len(o.slab)]
	binary.BigEndian.PutUint32(h[seqOffset:], seq)
	return h
}

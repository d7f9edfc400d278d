// Package cluster makes several imd nodes of one tenant behave, to every client, like one
// node (DESIGN §11, issue 14):
//
//   - Keeper renews this node's lease in Redis, retires the nodes whose lease ran out (their
//     presence entries and push channel), and holds the deliver-queue partitions this node
//     consumes, one node per partition, so a topic keeps its seq order across nodes. A
//     partition taken from a dead node gets its processing list requeued in the same step.
//   - Tracker records, for every device connected here, that this node holds it (presence),
//     and kicks the older connection of the device when it was on another node.
//   - Pusher decorates the local ports.DevicePusher: it pushes to local sessions, then hands
//     the pushes for devices on other live nodes to those nodes' channels.
//   - Receiver reads this node's channel and pushes what it gets to local sessions with the
//     same limits, PUSH_ACK tracking and MISSED_MESSAGE fallback as local pushes.
package cluster

package redis

import "strconv"

// Keys of many nodes on one tenant (DESIGN §11, issue 14). The node ZSET stays under the
// tenant's tag; a user's presence lives in the user's slot group beside the part of each
// node's devices SET that lists that group's users, so one script claims both; a node's push
// STREAM lives in the group its name hashes to.

// Nodes is the ZSET of the tenant's node instances, scored by the Unix ms their lease ends.
func (k Keys) Nodes() string { return k.prefix + "nodes" }

// PresenceWhole is the STRING whose presence says the registry is whole (DESIGN §13 "Unknown
// until healed"): beside the node ZSET, so a loss that takes the leases takes it too.
func (k Keys) PresenceWhole() string { return k.prefix + "presence:whole" }

// PresenceHeal is the STRING holding the Unix ms a heal under way ends at, after which the
// registry is whole again.
func (k Keys) PresenceHeal() string { return k.prefix + "presence:heal" }

// Presence is the HASH of one user's connected devices: field device id, value "node|token".
func (k Keys) Presence(user int64) string { return k.user(user).prefix + "presence:" + itoa(user) }

// NodeDevices is the SET of "user:device" a node instance has claimed among the users of slot
// group g, so the presence entries of a dead node can be found and removed without a scan.
func (k Keys) NodeDevices(node string, g int) string {
	return k.Group(g).prefix + "node:" + node + ":devices"
}

// NodeChannel is the STREAM of pushes and kicks handed to one node instance.
func (k Keys) NodeChannel(node string) string {
	return k.Group(TopicGroup(node)).prefix + "node:" + node + ":push"
}

// DeliverLease is the STRING naming the node instance that consumes partition i of n, in the
// partition's slot group.
func (k Keys) DeliverLease(i, n int) string {
	return k.partition(i).prefix + "deliver:lease:" + strconv.Itoa(n) + ":" + strconv.Itoa(i)
}

package redis

import "strconv"

// Keys of many nodes on one tenant (DESIGN §11, issue 14). They carry the tenant's hash tag
// like every other key, so the scripts below that touch several of them stay in one slot.

// Nodes is the ZSET of the tenant's node instances, scored by the Unix ms their lease ends.
func (k Keys) Nodes() string { return k.prefix + "nodes" }

// Presence is the HASH of one user's connected devices: field device id, value "node|token".
func (k Keys) Presence(user int64) string { return k.prefix + "presence:" + itoa(user) }

// NodeDevices is the SET of "user:device" a node instance has claimed, so the presence
// entries of a dead node can be found and removed without a scan.
func (k Keys) NodeDevices(node string) string { return k.prefix + "node:" + node + ":devices" }

// NodeChannel is the STREAM of pushes and kicks handed to one node instance.
func (k Keys) NodeChannel(node string) string { return k.prefix + "node:" + node + ":push" }

// DeliverLease is the STRING naming the node instance that consumes partition i of n.
func (k Keys) DeliverLease(i, n int) string {
	return k.prefix + "deliver:lease:" + strconv.Itoa(n) + ":" + strconv.Itoa(i)
}

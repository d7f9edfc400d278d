package redis

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/domain/topic"
)

// Keys builds every Redis key of one tenant (DESIGN §3). Each key carries a hash tag: {tenant}
// for the tenant-wide keys, {tenant~g} for the keys of slot group g (Group), so Redis Cluster
// keeps what one script touches in one slot and spreads the rest (DESIGN §11).
type Keys struct {
	tenant string
	prefix string // "im:{tenant}:" or "im:{tenant~g}:"
}

// KeysOf returns the key builder of a tenant. The name is validated because it is spliced
// into the hash tag: a brace in it would move keys to another slot.
func KeysOf(name string) (Keys, error) {
	if !tenant.Valid(name) {
		return Keys{}, fmt.Errorf("invalid tenant %q", name)
	}
	return Keys{tenant: name, prefix: "im:{" + name + "}:"}, nil
}

// SlotGroups is how many hash tags one tenant's grouped keys are spread over (DESIGN §11): one
// tenant's Redis work is no longer bound to one Cluster slot, hence one master's core. The
// number is part of every grouped key's name, so it is fixed: another count would strand the
// grouped keys as a FLUSHALL would. 64 tags spread evenly enough over any cluster of up to
// about 16 masters.
const SlotGroups = 64

// Group is the key builder of slot group g (0 ≤ g < SlotGroups) of the same tenant: the same
// key names under the hash tag {tenant~g}. '~' is never in a tenant name, so no group's tag is
// another tenant's tag.
func (k Keys) Group(g int) Keys {
	return Keys{tenant: k.tenant, prefix: "im:{" + k.tenant + "~" + strconv.Itoa(g) + "}:"}
}

// TopicGroup is the slot group of a topic's keys: FNV-1a of its name, so every node agrees.
func TopicGroup(topicName string) int {
	h := fnv.New32a()
	h.Write([]byte(topicName)) // a hash.Hash never fails to write
	return int(h.Sum32() % SlotGroups)
}

// UserGroup is the slot group of a user's keys.
func UserGroup(user int64) int { return int(uint64(user) % SlotGroups) }

// keysForTopic validates both tenant and topic. Topics are checked so a stray ':' can never
// make two idempotency keys collide.
func keysForTopic(tenantName, topicName string) (Keys, error) {
	k, err := KeysOf(tenantName)
	if err != nil {
		return Keys{}, err
	}
	if _, err := topic.Parse(topicName); err != nil {
		return Keys{}, err
	}
	return k, nil
}

// topicKeys is the key builder of a topic's slot group, once tenant and topic are checked:
// the topic's seq counter, idempotency records, pending marks, route and hot cache share its
// group's slot with the group's month state, which is all the seq script and the commit
// follow-up's topic parts touch (DESIGN §11).
func topicKeys(tenantName, topicName string) (Keys, error) {
	k, err := keysForTopic(tenantName, topicName)
	if err != nil {
		return Keys{}, err
	}
	return k.Group(TopicGroup(topicName)), nil
}

// ActiveMonth is the STRING YYYYMM every node writes new messages to; each slot group (Group)
// has its own, which the seq script of the group's topics reads (ports.MonthState).
func (k Keys) ActiveMonth() string { return k.prefix + "groupmsg:active_month" }

// ReadyMonths is the SET of YYYYMM whose month table exists; the seq script only advances
// active_month into it.
func (k Keys) ReadyMonths() string { return k.prefix + "groupmsg:ready_months" }

// SwitchMonth is the HASH of the early switch scheduled for a later instant (month, at: Redis
// TIME in ms); the scripts that read active_month apply it once due (ports.MonthState.SwitchAt).
func (k Keys) SwitchMonth() string { return k.prefix + "groupmsg:switch_month" }

// Seq is the per-topic counter; never reset, no TTL.
func (k Keys) Seq(topic string) string { return k.prefix + "groupmsg:seq:" + topic }

// Pending is the per-topic ZSET of the seqs whose sends still run: member "<seq>:<attempt>",
// score the mark's deadline in Redis TIME milliseconds (ports.PendingSeqs).
func (k Keys) Pending(topic string) string { return k.prefix + "groupmsg:pending:" + topic }

// Idem is the send idempotency HASH of (topic, from, client_msg_id). The client id goes last,
// so whatever characters it holds cannot collide with another key.
func (k Keys) Idem(topic string, from int64, clientMsgID string) string {
	return k.prefix + "groupmsg:idem:" + topic + ":" + strconv.FormatInt(from, 10) + ":" + clientMsgID
}

// Route is the topic's month ZSET: member YYYYMM, score the month's min seq.
func (k Keys) Route(topic string) string { return k.prefix + "groupmsg:route:" + topic }

// RouteMeta is the topic's HASH field YYYYMM → "min_seq,max_seq,count,min_created_ms,max_created_ms".
func (k Keys) RouteMeta(topic string) string { return k.prefix + "groupmsg:route_meta:" + topic }

// The deliver lists of partition i of a split live in slot group i % SlotGroups (DESIGN §11):
// a partition's queue, processing list, lease and dead letters are what one consumer's scripts
// touch together, and nothing ties one partition to another.
func (k Keys) partition(i int) Keys { return k.Group(PartitionGroup(i)) }

// PartitionGroup is the slot group of deliver partition i, whatever the split.
func PartitionGroup(i int) int { return i % SlotGroups }

// DeliverQueue is the LIST of jobs waiting for a worker when the queue has one partition.
func (k Keys) DeliverQueue() string { return k.DeliverQueueOf(0, 1) }

// DeliverProcessing is the LIST of jobs taken by a worker and not yet acknowledged when the
// queue has one partition.
func (k Keys) DeliverProcessing() string { return k.DeliverProcessingOf(0, 1) }

// DeliverQueueOf is partition i of a queue split into n, in the partition's slot group. The
// count is part of the name, so lists of another split never mix with these; n ≤ 1 is
// DeliverQueue.
func (k Keys) DeliverQueueOf(i, n int) string { return k.partition(i).deliverList("queue", i, n) }

// DeliverProcessingOf is the processing LIST of partition i of n; n ≤ 1 is DeliverProcessing.
func (k Keys) DeliverProcessingOf(i, n int) string {
	return k.partition(i).deliverList("processing", i, n)
}

// UngroupedDeliverQueueOf is DeliverQueueOf as it was named before the deliver lists were
// spread over slot groups, under the tenant's own tag: RequeueStale drains it.
func (k Keys) UngroupedDeliverQueueOf(i, n int) string { return k.deliverList("queue", i, n) }

// UngroupedDeliverProcessingOf is DeliverProcessingOf before the slot groups.
func (k Keys) UngroupedDeliverProcessingOf(i, n int) string {
	return k.deliverList("processing", i, n)
}

// UngroupedDeliverDead is the tenant's one dead-letter LIST before the slot groups.
func (k Keys) UngroupedDeliverDead() string { return k.prefix + "deliver:dead" }

func (k Keys) deliverList(name string, i, n int) string {
	if n <= 1 {
		return k.prefix + "deliver:" + name
	}
	return k.prefix + "deliver:" + name + ":" + strconv.Itoa(n) + ":" + strconv.Itoa(i)
}

// DeliverPartitions is the SET of partition counts whose lists may still hold jobs: the
// configured count, and an earlier one until a boot has moved its jobs over.
func (k Keys) DeliverPartitions() string { return k.prefix + "deliver:partitions" }

// DeliverDead is the LIST of the jobs that failed too often in the partitions of slot group g
// (one list per group, whatever the split), so a job goes there in one step from its
// processing list.
func (k Keys) DeliverDead(g int) string { return k.Group(g).prefix + "deliver:dead" }

// DeliverDone marks a job identity as acted upon (short TTL). It is read and written alone, so
// it goes to the slot group its name hashes to (TopicGroup's hash), which spreads the markers.
func (k Keys) DeliverDone(key string) string {
	return k.Group(TopicGroup(key)).prefix + "deliver:done:" + key
}

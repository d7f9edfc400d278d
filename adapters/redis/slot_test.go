package redis

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
)

// tenantKeys calls every key builder of Keys once, with arguments that would break a naive
// hash tag (braces, colons). A new builder must be listed here, or TestKeysCoverEveryBuilder
// fails: that keeps TestTenantKeysShareOneSlot honest as keys are added.
var tenantKeys = map[string]func(Keys) string{
	"DeliverPartitions":            Keys.DeliverPartitions,
	"UngroupedDeliverQueueOf":      func(k Keys) string { return k.UngroupedDeliverQueueOf(7, 16) },
	"UngroupedDeliverProcessingOf": func(k Keys) string { return k.UngroupedDeliverProcessingOf(7, 16) },
	"UngroupedDeliverDead":         Keys.UngroupedDeliverDead,
	"RevokedToken":                 func(k Keys) string { return k.RevokedToken("{jti}") },
	"RevokedUser":                  func(k Keys) string { return k.RevokedUser(42) },
	"ListGaps":                     Keys.ListGaps,
	"RouteRepair":                  Keys.RouteRepair,
	"RouteRepairVersion":           Keys.RouteRepairVersion,
	"RoutesBuilt":                  Keys.RoutesBuilt,
	"Compensation":                 Keys.Compensation,
	"CompensationIDs":              Keys.CompensationIDs,
	"Lock":                         func(k Keys) string { return k.Lock("{shard}") },
	"Nodes":                        Keys.Nodes,
	"PresenceWhole":                Keys.PresenceWhole,
	"PresenceHeal":                 Keys.PresenceHeal,
}

// groupedKeys calls every key builder that places its key in a slot group of its own (DESIGN
// §11), with the group it must land in: what one script touches together shares a group, and
// nothing else need.
var groupedKeys = map[string]struct {
	key   func(Keys) string
	group int
}{
	"DeliverQueue":        {Keys.DeliverQueue, 0},
	"DeliverProcessing":   {Keys.DeliverProcessing, 0},
	"DeliverQueueOf":      {func(k Keys) string { return k.DeliverQueueOf(70, 128) }, 70 % SlotGroups},
	"DeliverProcessingOf": {func(k Keys) string { return k.DeliverProcessingOf(70, 128) }, 70 % SlotGroups},
	"DeliverLease":        {func(k Keys) string { return k.DeliverLease(70, 128) }, 70 % SlotGroups},
	"DeliverDead":         {func(k Keys) string { return k.DeliverDead(6) }, 6},
	"DeliverDone":         {func(k Keys) string { return k.DeliverDone("{m42}") }, TopicGroup("{m42}")},
	"DeliverListMarks":    {func(k Keys) string { return k.DeliverListMarks(42, 9) }, 9},
	"DeliverListSeqs":     {func(k Keys) string { return k.DeliverListSeqs(42, 9, 9) }, 9},
	"DialogUnread":        {func(k Keys) string { return k.DialogUnread(130) }, 2},
	"DialogRead":          {func(k Keys) string { return k.DialogRead(130) }, 2},
	"DialogUnreadCount":   {func(k Keys) string { return k.DialogUnreadCount(130) }, 2},
	"DialogMuted":         {func(k Keys) string { return k.DialogMuted(130) }, 2},
	"DialogPinned":        {func(k Keys) string { return k.DialogPinned(130) }, 2},
	"DialogBuilt":         {func(k Keys) string { return k.DialogBuilt(130) }, 2},
	"Presence":            {func(k Keys) string { return k.Presence(130) }, 2},
	"DialogPreview":       {func(k Keys) string { return k.DialogPreview(71) }, 7},
	"NodeDevices":         {func(k Keys) string { return k.NodeDevices("1-{ab}:cd", 5) }, 5},
	"NodeChannel":         {func(k Keys) string { return k.NodeChannel("1-{ab}:cd") }, TopicGroup("1-{ab}:cd")},
	// The seq script's and the commit follow-up's topic keys, built as the adapters build them
	// (topicKeys): in the topic's group, beside the group's own copy of the month state.
	"ActiveMonth": {func(k Keys) string { return slotTopicKeys(k).ActiveMonth() }, TopicGroup(slotTopic)},
	"ReadyMonths": {func(k Keys) string { return slotTopicKeys(k).ReadyMonths() }, TopicGroup(slotTopic)},
	"SwitchMonth": {func(k Keys) string { return slotTopicKeys(k).SwitchMonth() }, TopicGroup(slotTopic)},
	"Seq":         {func(k Keys) string { return slotTopicKeys(k).Seq(slotTopic) }, TopicGroup(slotTopic)},
	"Idem":        {func(k Keys) string { return slotTopicKeys(k).Idem(slotTopic, 1, "x{other}:y") }, TopicGroup(slotTopic)},
	"Pending":     {func(k Keys) string { return slotTopicKeys(k).Pending(slotTopic) }, TopicGroup(slotTopic)},
	"Route":       {func(k Keys) string { return slotTopicKeys(k).Route(slotTopic) }, TopicGroup(slotTopic)},
	"RouteMeta":   {func(k Keys) string { return slotTopicKeys(k).RouteMeta(slotTopic) }, TopicGroup(slotTopic)},
	"HotMessages": {func(k Keys) string { return slotTopicKeys(k).HotMessages(slotTopic) }, TopicGroup(slotTopic)},
}

// slotTopic is the topic the send-side grouped keys are built for.
const slotTopic = "p2p_1_2"

// slotTopicKeys is what the send-side adapters build slotTopic's keys with.
func slotTopicKeys(k Keys) Keys {
	tk, err := topicKeys(k.tenant, slotTopic)
	if err != nil {
		panic(err) // a valid tenant and topic: only a broken test gets here
	}
	return tk
}

// TestGroupedKeysLandInTheirGroup: each grouped key hashes to its group's slot, here and by the
// cluster's own CLUSTER KEYSLOT when services.sh started one.
func TestGroupedKeysLandInTheirGroup(t *testing.T) {
	k, err := KeysOf("acme")
	if err != nil {
		t.Fatal(err)
	}
	var c rueidis.Client
	if cluster.configured() {
		c = cluster.client(t)
	}
	for _, name := range slices.Sorted(maps.Keys(groupedKeys)) {
		e := groupedKeys[name]
		key, want := e.key(k), keySlot("acme~"+strconv.Itoa(e.group))
		if got := keySlot(key); got != want {
			t.Errorf("Keys.%s = %q: slot %d; want group %d's %d", name, key, got, e.group, want)
		}
		if c == nil {
			continue
		}
		got, err := c.Do(t.Context(), c.B().ClusterKeyslot().Key(key).Build()).AsInt64()
		if err != nil || got != int64(want) {
			t.Errorf("CLUSTER KEYSLOT %q = %d, %v; want %d", key, got, err, want)
		}
	}
}

func TestKeysCoverEveryBuilder(t *testing.T) {
	typ := reflect.TypeFor[Keys]()
	for i := range typ.NumMethod() {
		if name := typ.Method(i).Name; tenantKeys[name] == nil && groupedKeys[name].key == nil && name != "Group" { // Group builds builders; TestGroupsSpreadOverSlots checks it
			t.Errorf("Keys.%s is in neither tenantKeys nor groupedKeys: list it so its slot is checked", name)
		}
	}
}

// TestTenantKeysShareOneSlot: Redis Cluster runs a multi-key script or transaction only when
// all its keys hash to one slot, so every key of a tenant must (DESIGN §3: the {tenant} tag).
func TestTenantKeysShareOneSlot(t *testing.T) {
	k, err := KeysOf("acme")
	if err != nil {
		t.Fatal(err)
	}
	want := keySlot("acme")
	names := slices.Sorted(maps.Keys(tenantKeys))
	for _, name := range names {
		key := tenantKeys[name](k)
		if got := keySlot(key); got != want {
			t.Errorf("Keys.%s = %q: slot %d; want the tenant's %d", name, key, got, want)
		}
	}
	// The cluster's own CLUSTER KEYSLOT agrees, when services.sh started one.
	if !cluster.configured() {
		return
	}
	c := cluster.client(t)
	for _, name := range names {
		key := tenantKeys[name](k)
		got, err := c.Do(context.Background(), c.B().ClusterKeyslot().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
		}
		if got != int64(want) {
			t.Errorf("CLUSTER KEYSLOT %q = %d; want %d", key, got, want)
		}
	}
}

func TestKeySlotMatchesRedis(t *testing.T) {
	// Vectors from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]uint16{"123456789": 0x31C3 % 16384, "foo": 12182, "{user1000}.following": 3443, "{user1000}.followers": 3443, "foo{}{bar}": 8363} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d; want %d", key, got, want)
		}
	}
}

// keySlot is Redis Cluster's HASH_SLOT: CRC16 (XMODEM) of the key's hash tag — the part
// between the first '{' and the next '}', when not empty — or of the whole key, mod 16384.
func keySlot(key string) uint16 {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// TestGroupsSpreadOverSlots: the groups of one tenant land on many slots, never on the
// tenant-wide slot's tag or another tenant's, and the group functions stay in range.
func TestGroupsSpreadOverSlots(t *testing.T) {
	k, err := KeysOf("acme")
	if err != nil {
		t.Fatal(err)
	}
	slots := map[uint16]bool{}
	for g := range SlotGroups {
		key := k.Group(g).Seq("grp_1")
		if want := "im:{acme~" + strconv.Itoa(g) + "}:groupmsg:seq:grp_1"; key != want {
			t.Fatalf("Group(%d).Seq = %q; want %q", g, key, want)
		}
		slots[keySlot(key)] = true
	}
	if len(slots) < SlotGroups*9/10 {
		t.Errorf("%d groups hash to only %d slots", SlotGroups, len(slots))
	}
	for _, topicName := range []string{"grp_1", "p2p_1_2", "grp_999999"} {
		if g := TopicGroup(topicName); g < 0 || g >= SlotGroups {
			t.Errorf("TopicGroup(%q) = %d", topicName, g)
		}
	}
	for _, user := range []int64{0, 1, 63, 64, 1 << 40, -1} {
		if g := UserGroup(user); g < 0 || g >= SlotGroups {
			t.Errorf("UserGroup(%d) = %d", user, g)
		}
	}
}

// TestOneTenantsSeqWorkReachesEveryMaster: one tenant's sends over many topics run their seq
// scripts on every master of a three-master Redis Cluster, not on the one holding the tenant's
// own slot (DESIGN §11): each master ends up holding idempotency records of the tenant, which
// only the seq script writes, and took seq-script calls by its INFO commandstats.
func TestOneTenantsSeqWorkReachesEveryMaster(t *testing.T) {
	c := cluster.client(t)
	ctx := t.Context()
	tenant := testTenant(t, c)
	s, ms := NewSeqAllocator(c, time.Hour), NewMonthState(c)
	m := month.Month(203106)
	activateMonth(t, ms, tenant, m)
	masters := c.Nodes()
	if len(masters) < 3 {
		t.Fatalf("the cluster has %d masters; want 3", len(masters))
	}
	before := map[string]int64{}
	for addr, node := range masters {
		before[addr] = evalCalls(t, node)
	}
	const topics = 64
	for i := range topics {
		topic := "grp_" + strconv.Itoa(i+1)
		if err := s.Reseed(ctx, tenant, topic, 0); err != nil {
			t.Fatal(err)
		}
		req := seq.Request{Topic: topic, From: 1, ClientMsgID: "c", MsgID: int64(i + 1), Hash: "h", MonthOverride: m}
		if a, err := s.Allocate(ctx, tenant, req); err != nil || a.Seq != 1 || a.Month != m {
			t.Fatalf("Allocate(%s) = %+v, %v; want seq 1 in %s", topic, a, err, m)
		}
	}
	for addr, node := range masters {
		records := len(scanKeys(t, node, "im:{"+tenant+"~*}:groupmsg:idem:*"))
		calls := evalCalls(t, node) - before[addr]
		t.Logf("master %s: %d of the %d idempotency records, %d script calls", addr, records, topics, calls)
		if records == 0 {
			t.Errorf("master %s holds none of the tenant's %d idempotency records: its seq scripts ran elsewhere", addr, topics)
		}
		if calls <= 0 {
			t.Errorf("master %s took no script call", addr)
		}
	}
}

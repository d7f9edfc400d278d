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

// tenantWideKeys calls every builder of a key under the tenant's own tag {tenant}, with
// arguments that would break a naive hash tag (braces, colons): what one script must reach
// together with keys of other topics or users of the tenant, or what is one per tenant.
var tenantWideKeys = map[string]func(Keys) string{
	"DeliverQueue":        Keys.DeliverQueue,
	"DeliverProcessing":   Keys.DeliverProcessing,
	"DeliverQueueOf":      func(k Keys) string { return k.DeliverQueueOf(7, 16) },
	"DeliverProcessingOf": func(k Keys) string { return k.DeliverProcessingOf(7, 16) },
	"DeliverPartitions":   Keys.DeliverPartitions,
	"DeliverDead":         Keys.DeliverDead,
	"DeliverDone":         func(k Keys) string { return k.DeliverDone("{m42}") },
	"DeliverLists":        func(k Keys) string { return k.DeliverLists("{once}") },
	"RevokedToken":        func(k Keys) string { return k.RevokedToken("{jti}") },
	"RevokedUser":         func(k Keys) string { return k.RevokedUser(42) },
	"DialogUnread":        func(k Keys) string { return k.DialogUnread(42) },
	"DialogRead":          func(k Keys) string { return k.DialogRead(42) },
	"DialogUnreadCount":   func(k Keys) string { return k.DialogUnreadCount(42) },
	"DialogMuted":         func(k Keys) string { return k.DialogMuted(42) },
	"DialogPinned":        func(k Keys) string { return k.DialogPinned(42) },
	"DialogPreview":       func(k Keys) string { return k.DialogPreview(7) },
	"DialogBuilt":         func(k Keys) string { return k.DialogBuilt(42) },
	"ListGaps":            Keys.ListGaps,
	"RouteRepair":         Keys.RouteRepair,
	"RouteRepairVersion":  Keys.RouteRepairVersion,
	"RoutesBuilt":         Keys.RoutesBuilt,
	"Compensation":        Keys.Compensation,
	"CompensationIDs":     Keys.CompensationIDs,
	"Lock":                func(k Keys) string { return k.Lock("{shard}") },
	"Nodes":               Keys.Nodes,
	"Presence":            func(k Keys) string { return k.Presence(42) },
	"NodeDevices":         func(k Keys) string { return k.NodeDevices("1-{ab}:cd") },
	"NodeChannel":         func(k Keys) string { return k.NodeChannel("1-{ab}:cd") },
	"DeliverLease":        func(k Keys) string { return k.DeliverLease(7, 16) },
}

// groupedKeys calls every builder of a key under a slot group's tag {tenant~g} (Keys.Group,
// DESIGN §11), with the same kind of arguments: the group's copy of the month state and the
// keys of the topics in the group (topicKeys), which is all the seq script and the commit
// follow-up's topic parts touch in one call.
var groupedKeys = map[string]func(Keys) string{
	"ActiveMonth": Keys.ActiveMonth,
	"ReadyMonths": Keys.ReadyMonths,
	"SwitchMonth": Keys.SwitchMonth,
	"Seq":         func(k Keys) string { return k.Seq(slotTopic) },
	"Idem":        func(k Keys) string { return k.Idem(slotTopic, 1, "x{other}:y") },
	"Pending":     func(k Keys) string { return k.Pending(slotTopic) },
	"Route":       func(k Keys) string { return k.Route(slotTopic) },
	"RouteMeta":   func(k Keys) string { return k.RouteMeta(slotTopic) },
	"HotMessages": func(k Keys) string { return k.HotMessages(slotTopic) },
}

// slotTopic is the topic the grouped keys are built for.
const slotTopic = "p2p_1_2"

// TestKeysCoverEveryBuilder: every key builder is listed once, as tenant-wide or as grouped,
// so the slot tests below check every key as builders are added.
func TestKeysCoverEveryBuilder(t *testing.T) {
	typ := reflect.TypeFor[Keys]()
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		if name == "Group" { // builds builders; TestGroupsSpreadOverSlots checks it
			continue
		}
		switch wide, grouped := tenantWideKeys[name] != nil, groupedKeys[name] != nil; {
		case wide && grouped:
			t.Errorf("Keys.%s is listed both tenant-wide and grouped", name)
		case !wide && !grouped:
			t.Errorf("Keys.%s is in neither tenantWideKeys nor groupedKeys: list it so its slot is checked", name)
		}
	}
}

// TestKeysShareTheirTagSlot: Redis Cluster runs a multi-key script or transaction only when
// all its keys hash to one slot. The tenant-wide keys share the tenant's slot (DESIGN §3: the
// {tenant} tag); the grouped keys of each slot group share the group's slot, whichever group
// (DESIGN §11); and the builders the adapters use for a topic build its group's keys.
func TestKeysShareTheirTagSlot(t *testing.T) {
	k, err := KeysOf("acme")
	if err != nil {
		t.Fatal(err)
	}
	topic, err := topicKeys("acme", slotTopic)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		keys  Keys
		slot  uint16
		names map[string]func(Keys) string
	}
	wants := []want{{k, keySlot("acme"), tenantWideKeys}}
	for _, g := range []int{0, 1, TopicGroup(slotTopic), SlotGroups - 1} {
		wants = append(wants, want{k.Group(g), keySlot("acme~" + strconv.Itoa(g)), groupedKeys})
	}
	var c rueidis.Client
	if cluster.configured() { // the cluster's own CLUSTER KEYSLOT agrees, when services.sh started one
		c = cluster.client(t)
	}
	for _, w := range wants {
		for _, name := range slices.Sorted(maps.Keys(w.names)) {
			key := w.names[name](w.keys)
			if got := keySlot(key); got != w.slot {
				t.Errorf("%q: slot %d; want its tag's %d", key, got, w.slot)
			}
			if c == nil {
				continue
			}
			got, err := c.Do(context.Background(), c.B().ClusterKeyslot().Key(key).Build()).AsInt64()
			if err != nil {
				t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
			}
			if got != int64(w.slot) {
				t.Errorf("CLUSTER KEYSLOT %q = %d; want %d", key, got, w.slot)
			}
		}
	}
	for name, build := range groupedKeys {
		if got, want := build(topic), build(k.Group(TopicGroup(slotTopic))); got != want {
			t.Errorf("topicKeys(%s).%s = %q; want its group's %q", slotTopic, name, got, want)
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
	before := scriptCalls(t, c)
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
	after := scriptCalls(t, c)
	nodes := c.Nodes()
	if len(nodes) < 3 {
		t.Fatalf("the cluster has %d masters; want 3", len(nodes))
	}
	for addr, node := range nodes {
		var records int
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match("im:{"+tenant+"~*}:groupmsg:idem:*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("scan %s: %v", addr, err)
			}
			records += len(e.Elements)
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
		t.Logf("master %s: %d of the %d idempotency records, %d script calls", addr, records, topics, after[addr]-before[addr])
		if records == 0 {
			t.Errorf("master %s holds none of the tenant's %d idempotency records: its seq scripts ran elsewhere", addr, topics)
		}
		if after[addr] <= before[addr] {
			t.Errorf("master %s took no script call (commandstats %d then %d)", addr, before[addr], after[addr])
		}
	}
}

// scriptCalls reads each master's count of EVAL and EVALSHA calls from INFO commandstats.
func scriptCalls(t *testing.T, c rueidis.Client) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for addr, node := range c.Nodes() {
		info, err := node.Do(t.Context(), node.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			t.Fatalf("INFO commandstats of %s: %v", addr, err)
		}
		for line := range strings.Lines(info) {
			name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok || (name != "cmdstat_eval" && name != "cmdstat_evalsha") {
				continue
			}
			calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
			n, err := strconv.ParseInt(calls, 10, 64)
			if err != nil {
				t.Fatalf("commandstats of %s: %q: %v", addr, line, err)
			}
			out[addr] += n
		}
	}
	return out
}

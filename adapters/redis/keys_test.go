package redis

import (
	"strconv"
	"strings"
	"testing"
)

func TestKeysLayout(t *testing.T) {
	k, err := KeysOf("acme")
	if err != nil {
		t.Fatalf("KeysOf: %v", err)
	}
	cases := []struct{ got, want string }{
		{k.ActiveMonth(), "im:{acme}:groupmsg:active_month"},
		{k.ReadyMonths(), "im:{acme}:groupmsg:ready_months"},
		{k.SwitchMonth(), "im:{acme}:groupmsg:switch_month"},
		{k.Seq("grp_1"), "im:{acme}:groupmsg:seq:grp_1"},
		{k.Idem("p2p_1_2", 1, "a:b{c}"), "im:{acme}:groupmsg:idem:p2p_1_2:1:a:b{c}"},
		{k.Route("grp_1"), "im:{acme}:groupmsg:route:grp_1"},
		{k.RouteMeta("grp_1"), "im:{acme}:groupmsg:route_meta:grp_1"},
		{k.DeliverPartitions(), "im:{acme}:deliver:partitions"},
		{k.UngroupedDeliverQueueOf(0, 1), "im:{acme}:deliver:queue"},
		{k.UngroupedDeliverProcessingOf(3, 16), "im:{acme}:deliver:processing:16:3"},
		{k.UngroupedDeliverDead(), "im:{acme}:deliver:dead"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("key %q; want %q", c.got, c.want)
		}
		// Redis Cluster hashes the first {...}: it must be the tenant tag for every key.
		if open, end := strings.IndexByte(c.got, '{'), strings.IndexByte(c.got, '}'); c.got[open+1:end] != "acme" {
			t.Errorf("key %q: hash tag %q; want acme", c.got, c.got[open+1:end])
		}
	}
}

// TestGroupedKeysLayout: the delivery keys keep their names under their slot group's tag
// (DESIGN §11).
func TestGroupedKeysLayout(t *testing.T) {
	k, err := KeysOf("acme")
	if err != nil {
		t.Fatalf("KeysOf: %v", err)
	}
	for _, c := range []struct{ got, want string }{
		{k.DeliverQueue(), "im:{acme~0}:deliver:queue"},
		{k.DeliverProcessing(), "im:{acme~0}:deliver:processing"},
		{k.DeliverQueueOf(0, 1), "im:{acme~0}:deliver:queue"},
		{k.DeliverQueueOf(3, 16), "im:{acme~3}:deliver:queue:16:3"},
		{k.DeliverProcessingOf(67, 128), "im:{acme~3}:deliver:processing:128:67"},
		{k.DeliverLease(3, 16), "im:{acme~3}:deliver:lease:16:3"},
		{k.DeliverDead(5), "im:{acme~5}:deliver:dead"},
		{k.DeliverDone("m42"), "im:{acme~" + strconv.Itoa(TopicGroup("m42")) + "}:deliver:done:m42"},
		{k.DeliverListMarks(42, 9), "im:{acme~9}:deliver:listmarks:42"},
		{k.DeliverListSeqs(42, 9, 9), "im:{acme~9}:deliver:listseqs:42:9"},
		{k.DialogUnread(65), "im:{acme~1}:dialog:unread:65"},
		{k.DialogPreview(66), "im:{acme~2}:dialog:preview:66"},
		{k.Presence(65), "im:{acme~1}:presence:65"},
		{k.NodeDevices("3-ab", 1), "im:{acme~1}:node:3-ab:devices"},
	} {
		if c.got != c.want {
			t.Errorf("key %q; want %q", c.got, c.want)
		}
	}
}

func TestKeysRejectBadNames(t *testing.T) {
	for _, name := range []string{"", "Acme", "a{b}", "a}b", "a:b", "1abc", strings.Repeat("a", 32)} {
		if _, err := KeysOf(name); err == nil {
			t.Errorf("KeysOf(%q) succeeded", name)
		}
	}
	for _, topic := range []string{"", "grp_", "grp_1:2", "grp_01", "p2p_2_1", "x"} {
		if _, err := keysForTopic("acme", topic); err == nil {
			t.Errorf("keysForTopic(acme, %q) succeeded", topic)
		}
	}
}

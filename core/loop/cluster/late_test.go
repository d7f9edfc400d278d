package cluster

import (
	"regexp"
	"slices"
	"testing"

	"github.com/imdhq/imd/core/domain/delivery"
)

func TestInstanceNameIsNodeAndBoot(t *testing.T) {
	a, err := InstanceName(7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := InstanceName(7)
	if !regexp.MustCompile(`^7-[0-9a-f]{8}$`).MatchString(a) || a == b {
		t.Fatalf("instance names %q, %q: want 7-<8 hex>, different per process", a, b)
	}
}

func TestLateBindings(t *testing.T) {
	var names LateTenants
	if got := names.Names(); got != nil {
		t.Fatalf("names before Bind = %v, want none", got)
	}
	names.Bind(func() []string { return []string{tenant} })
	if got := names.Names(); !slices.Equal(got, []string{tenant}) {
		t.Fatalf("names = %v, want [%s]", got, tenant)
	}

	var late LatePusher
	s := newSessions(1)
	late.Bind(s)
	r := late.Push(t.Context(), tenant, delivery.Target{Recipients: []int64{1, 2}}, delivery.Push{})
	n := late.PushDevice(t.Context(), tenant, 1, 1, delivery.Push{})
	if r != (delivery.Report{Delivered: 1, Offline: 1}) || n != 1 || len(s.got) != 2 {
		t.Fatalf("through the late pusher: report %+v, device pushes %d, %d pushes reached; want the bound pusher's", r, n, len(s.got))
	}
}

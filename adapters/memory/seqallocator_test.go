package memory

import (
	"fmt"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/ports/contract"
)

// Each fixture gets its own fake, so the tenant name only needs to be valid.
const contractTenant = "acme"

func TestPendingSeqsContract(t *testing.T) {
	for _, groups := range contractGroups {
		t.Run(fmt.Sprintf("%d groups", groups), func(t *testing.T) {
			contract.PendingSeqs(t, func(*testing.T) contract.SeqFixture {
				ms := NewGroupedMonthState(time.Now, groups)
				s := NewSeqAllocator(ms, time.Now)
				return contract.SeqFixture{Tenant: contractTenant, Seq: s, Months: ms, Pending: s, FollowUp: &CommitFollowUp{Seqs: s}}
			})
		})
	}
}

func TestSeqAllocatorContract(t *testing.T) {
	for _, groups := range contractGroups {
		t.Run(fmt.Sprintf("%d groups", groups), func(t *testing.T) {
			contract.SeqAllocator(t, func(*testing.T) contract.SeqFixture {
				ms := NewGroupedMonthState(time.Now, groups)
				s := NewSeqAllocator(ms, time.Now)
				return contract.SeqFixture{Tenant: contractTenant, Seq: s, Months: ms, FollowUp: &CommitFollowUp{Seqs: s}}
			})
		})
	}
}

func TestSeqAllocatorRecordsExpire(t *testing.T) {
	now := time.Date(2031, 6, 10, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ms := NewMonthState(clock)
	s := NewSeqAllocator(ms, clock)
	ctx := t.Context()
	if err := ms.MarkReady(ctx, contractTenant, 0, 203106); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Advance(ctx, contractTenant, 0, 203106); err != nil {
		t.Fatal(err)
	}
	if err := s.Reseed(ctx, contractTenant, "grp_1", 0); err != nil {
		t.Fatal(err)
	}
	req := seq.Request{Topic: "grp_1", From: 1, ClientMsgID: "c", MsgID: 9, Hash: "h"}
	steps := []struct {
		advance  time.Duration
		wantSeq  int64
		existing bool
	}{
		{0, 1, false},
		{idemTTL - time.Second, 1, true},
		{time.Second, 2, false}, // the record expired: a late retry is a new message
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		a, err := s.Allocate(ctx, contractTenant, req)
		if err != nil || a.Seq != st.wantSeq || a.Existing != st.existing {
			t.Fatalf("after +%v: %+v, %v; want seq %d existing=%v", st.advance, a, err, st.wantSeq, st.existing)
		}
	}
}

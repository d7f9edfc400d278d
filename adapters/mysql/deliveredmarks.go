package mysql

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
)

// maxDeliveredMarks bounds the marks of one UPDATE, so one statement never holds many rows'
// locks long.
const maxDeliveredMarks = 256

// deliveredMark raises user's delivered watermark of the conversation to seq.
type deliveredMark struct{ conversationID, user, seq int64 }

// raiseDelivered raises the delivered watermark of mark (every PUSH_ACK of a P2P message,
// DESIGN §13 "Read receipts") and waits for the COMMIT of the transaction that carries it
// (marker): the tenant's next group-commit batch, or an UPDATE of the marks that met while no
// batch was coming.
func (s *MessageStore) raiseDelivered(ctx context.Context, tenant string, mark deliveredMark) error {
	req := newMarkReq(mark)
	if err := s.addMark(tenant, func(m *marker) { addMark(m, &m.delivered, req) }); err != nil {
		return err
	}
	return req.wait(ctx)
}

// marksOf is one mark per member row, the highest seq, in key order: a row is named once in
// an UPDATE (a multi-table UPDATE changes a row once, whichever match comes first), and every
// batch locks rows in the same order.
func marksOf(batch []*markReq[deliveredMark]) []deliveredMark {
	out := make([]deliveredMark, 0, len(batch))
	for _, r := range batch {
		out = append(out, r.mark)
	}
	slices.SortFunc(out, func(a, b deliveredMark) int {
		return cmp.Or(cmp.Compare(a.conversationID, b.conversationID), cmp.Compare(a.user, b.user), cmp.Compare(b.seq, a.seq))
	})
	return slices.CompactFunc(out, func(a, b deliveredMark) bool {
		return a.conversationID == b.conversationID && a.user == b.user
	})
}

// execDeliveredMarks sends the UPDATE that raises batch's marks (sql/queries/receipts.sql). It
// only raises, so marks that race or come late never lower a watermark.
func execDeliveredMarks(ctx context.Context, db sqlcdb.DBTX, batch []*markReq[deliveredMark]) error {
	marks := marksOf(batch)
	upd := rowBatch{sep: sepUnion}
	for _, m := range marks {
		p := sqlcdb.RaiseDeliveredParams{ConversationID: m.conversationID, UserID: m.user, Seq: m.seq}
		if err := upd.add(func(q *sqlcdb.Queries) error { return q.RaiseDelivered(ctx, p) }); err != nil {
			return err
		}
	}
	if err := upd.exec(ctx, db); err != nil {
		return fmt.Errorf("raise %d delivered marks: %w", len(marks), err)
	}
	return nil
}

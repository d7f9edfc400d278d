package dualread

import (
	"context"
	"errors"
	"fmt"

	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// Copier copies one legacy row into its month table ahead of the backfill.
type Copier interface {
	CopyMessage(ctx context.Context, tenant, topic string, seq int64) (found bool, err error)
}

// Editor is a ports.MessageEditor that can change a legacy message the backfill has not copied
// yet: it copies that one row first (the same INSERT IGNORE the backfill runs, which later skips
// it) and changes the copy, so every change is written once, to the month table. Only after the
// cutover: before it the old system still owns the legacy rows.
type Editor struct {
	inner  ports.MessageEditor
	src    *Source
	copier Copier
}

var _ ports.MessageEditor = (*Editor)(nil)

// NewEditor decorates inner.
func NewEditor(inner ports.MessageEditor, src *Source, copier Copier) *Editor {
	return &Editor{inner: inner, src: src, copier: copier}
}

// Modify changes the message in month m, copying it from the legacy table first when the month
// table lacks it.
func (e *Editor) Modify(ctx context.Context, tenant string, m month.Month, topic string, seq int64,
	change func(current message.Message) (message.Revision, error)) (message.Message, error) {
	msg, err := e.inner.Modify(ctx, tenant, m, topic, seq, change)
	if !errors.Is(err, message.ErrNotFound) {
		return msg, err
	}
	st, stErr := e.src.current(ctx, tenant)
	if stErr != nil {
		return message.Message{}, stErr
	}
	if !st.DualRead() || st.Phase == legacy.PhaseNone {
		return message.Message{}, err
	}
	found, cerr := e.copier.CopyMessage(ctx, tenant, topic, seq)
	switch {
	case e.src.gone(ctx, tenant, cerr):
		return message.Message{}, err
	case cerr != nil:
		return message.Message{}, fmt.Errorf("copy legacy %s seq %d before changing it: %w", topic, seq, cerr)
	case !found:
		return message.Message{}, err
	}
	return e.inner.Modify(ctx, tenant, m, topic, seq, change)
}

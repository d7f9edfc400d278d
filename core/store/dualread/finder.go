package dualread

import (
	"context"
	"errors"
	"fmt"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// Finder is a ports.MessageFinder that also finds legacy rows not copied yet (READ by msg_id).
type Finder struct {
	inner ports.MessageFinder
	src   *Source
}

var _ ports.MessageFinder = (*Finder)(nil)

// NewFinder decorates inner.
func NewFinder(inner ports.MessageFinder, src *Source) *Finder {
	return &Finder{inner: inner, src: src}
}

// FindByID answers from the month table, else from the legacy table; a miss keeps the month
// table's error.
func (f *Finder) FindByID(ctx context.Context, tenant string, m month.Month, msgID int64) (message.Message, error) {
	msg, err := f.inner.FindByID(ctx, tenant, m, msgID)
	if err == nil || !absent(err) {
		return msg, err
	}
	on, stErr := f.src.active(ctx, tenant)
	if stErr != nil {
		return message.Message{}, stErr
	}
	if !on {
		return message.Message{}, err
	}
	lm, lerr := f.src.legacy.FindByID(ctx, tenant, m, msgID)
	switch {
	case lerr == nil:
		return lm, nil
	case errors.Is(lerr, message.ErrNotFound), f.src.gone(ctx, tenant, lerr):
		return message.Message{}, err
	}
	return message.Message{}, fmt.Errorf("legacy find msg_id %d in %s: %w", msgID, m, lerr)
}

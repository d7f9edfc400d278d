package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
)

// UserStatus reads t_users.status; social.UserUnknown when the user has no row.
func (d *Directory) UserStatus(ctx context.Context, tenant string, userID int64) (social.UserStatus, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return social.UserUnknown, err
	}
	st, err := t.q.UserStatus(ctx, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return social.UserUnknown, nil
	}
	if err != nil {
		return social.UserUnknown, fmt.Errorf("status of user %d: %w", userID, err)
	}
	return social.UserStatus(st), nil
}

// SetUserStatus writes t_users.status in one guarded UPDATE: a deleted user's row is never
// changed again (sql/queries/social.sql).
func (d *Directory) SetUserStatus(ctx context.Context, tenant string, userID int64, status social.UserStatus) error {
	if !status.Settable() {
		return apperr.New(apperr.InvalidArgument, "unknown user status")
	}
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	n, err := t.q.SetUserStatus(ctx, sqlcdb.SetUserStatusParams{Status: int8(status), UpdatedAt: d.now(), UserID: userID})
	if err != nil {
		return fmt.Errorf("set status of user %d: %w", userID, err)
	}
	if n > 0 {
		return nil
	}
	// No row changed: no such user, a deleted one, or (MySQL counts changed rows only) the
	// same status written in the same millisecond.
	st, err := d.UserStatus(ctx, tenant, userID)
	switch {
	case err != nil:
		return err
	case st == social.UserUnknown:
		return fmt.Errorf("user %d: %w", userID, social.ErrNotFound)
	case st == social.UserDeleted && status != social.UserDeleted:
		return fmt.Errorf("user %d: %w", userID, social.ErrUserDeleted)
	}
	return nil
}

package mysql

import (
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Server error numbers the adapter reacts to.
const (
	errDupEntry    = 1062
	errNoSuchTable = 1146
	errLockWait    = 1205
	errDeadlock    = 1213
	keyTopicSeq    = "uk_topic_seq"
)

func mysqlErrno(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// isDuplicate reports a unique-key violation on the named key ("" = any key). MySQL 8 says
// "for key 'table.key'", MariaDB "for key 'key'": matching the key name covers both.
func isDuplicate(err error, key string) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != errDupEntry {
		return false
	}
	return key == "" || strings.Contains(me.Message, "'"+key+"'") || strings.Contains(me.Message, "."+key+"'")
}

// isNoSuchTable reports ER_NO_SUCH_TABLE about table ("Table 'db.table' doesn't exist").
func isNoSuchTable(err error, table string) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == errNoSuchTable && strings.Contains(me.Message, "."+table+"'")
}

// isTransient reports a failure that a new transaction may not meet again.
func isTransient(err error) bool {
	n := mysqlErrno(err)
	return n == errDeadlock || n == errLockWait
}

// transientAttempts bounds the tries of a statement that met a deadlock or lock timeout.
const transientAttempts = 3

// retryTransient runs op until it succeeds, fails for good, or has met transientAttempts
// deadlocks or lock timeouts: the victim of a deadlock is rolled back whole, so trying again
// repeats nothing.
func retryTransient(op func() error) error {
	var err error
	for attempt := 1; attempt <= transientAttempts; attempt++ {
		if err = op(); err == nil || !isTransient(err) {
			return err
		}
	}
	return err
}

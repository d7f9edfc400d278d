package tenant

import (
	"regexp"
	"time"
)

// Source says where the deployment learned a tenant from.
type Source string

const (
	// FromConfig tenants are listed in the configuration of every node.
	FromConfig Source = "config"
	// Provisioned tenants were created through the admin API and live in the tenant registry.
	Provisioned Source = "provisioned"
)

// Info is one tenant of the deployment: its name, its database and the server holding it
// (DESIGN §1).
type Info struct {
	Name     string
	Database string
	// DSN names the database server of a tenant placed on another server than the deployment's
	// own (mysql.dsn), which "" means. It may hold a password: never log it.
	DSN       string
	Source    Source
	CreatedAt time.Time // zero for configured tenants
}

// DefaultDatabase is the database of a tenant that names none.
func DefaultDatabase(name string) string { return "imd_" + name }

var databaseRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// reservedDatabases are the server's own schemas: a tenant placed there would run its
// migrations inside the server's bookkeeping.
var reservedDatabases = map[string]bool{
	"mysql": true, "sys": true, "information_schema": true, "performance_schema": true,
}

// ValidDatabase reports whether name may hold a tenant: it is spliced into CREATE DATABASE, so
// only a plain identifier passes, and never one of the server's own schemas.
func ValidDatabase(name string) bool {
	return databaseRE.MatchString(name) && !reservedDatabases[name]
}

// Package tenant validates tenant names, which become database names and Redis hash tags.
package tenant

// maxNameLen bounds a tenant name, so "imd_" + name stays a short database name.
const maxNameLen = 31

// Valid reports whether name is a safe tenant name, ^[a-z][a-z0-9_]{0,30}$: it is spliced into
// a database name and a Redis hash tag, so it must never carry quoting or braces. Checked by
// hand, not by a regexp: every Redis key of every request checks it.
func Valid(name string) bool {
	if name == "" || len(name) > maxNameLen || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

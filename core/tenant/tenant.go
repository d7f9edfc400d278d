// Package tenant validates tenant names, which become database names and Redis hash tags.
package tenant

import "regexp"

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}$`)

// Valid reports whether name is a safe tenant name: it is spliced into a database name and a
// Redis hash tag, so it must never carry quoting or braces.
func Valid(name string) bool { return nameRE.MatchString(name) }

package config

import (
	"fmt"
	"reflect"

	"github.com/go-sql-driver/mysql"
	"github.com/goccy/go-yaml"
)

// masked stands in for a secret's value in printed configurations.
const masked = "********"

// Masked is c with every secret replaced by a placeholder (a DSN keeps all but its
// password), safe to print or log.
func (c Config) Masked() Config {
	maskSecrets(reflect.ValueOf(&c).Elem())
	return c
}

func maskSecrets(v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		fv := v.Field(i)
		switch kind := t.Field(i).Tag.Get("secret"); {
		case fv.Kind() == reflect.Struct:
			maskSecrets(fv)
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct:
			// A copy: c's slice is shared with the caller's Config, which keeps its secrets.
			items := reflect.MakeSlice(fv.Type(), fv.Len(), fv.Len())
			reflect.Copy(items, fv)
			for j := range items.Len() {
				maskSecrets(items.Index(j))
			}
			fv.Set(items)
		case kind == "" || fv.Kind() != reflect.String || fv.String() == "":
		case kind == "dsn":
			fv.SetString(maskDSN(fv.String()))
		default:
			fv.SetString(masked)
		}
	}
}

// maskDSN hides a DSN's password; one that does not parse is hidden whole, since where its
// password is cannot be told.
func maskDSN(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return masked
	}
	if cfg.Passwd != "" {
		cfg.Passwd = masked
	}
	return cfg.FormatDSN()
}

// Effective is the YAML of c as imd runs with it, secrets masked: what `imd check` prints.
func (c Config) Effective() ([]byte, error) {
	out, err := yaml.MarshalWithOptions(c.Masked(), yaml.IndentSequence(true))
	if err != nil {
		return nil, fmt.Errorf("print config: %w", err)
	}
	return out, nil
}

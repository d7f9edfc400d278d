package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// fileSuffix names a variable holding the path of a file with a secret key's value, the way
// compose and Kubernetes hand secrets over: IMD_ADMIN_KEY_FILE=/run/secrets/admin_key.
const fileSuffix = "_FILE"

// toolingVars are IMD_ variables of the project's scripts and tests, not of imd; they may be
// set in the shell imd runs from. Entries ending in '_' are prefixes.
var toolingVars = []string{
	"IMD_CONFIG",                        // the config file, read by cmd/imd
	"IMD_TEST_", "IMD_REQUIRE_SERVICES", // tests (deploy/local/services.sh env)
	"IMD_STATE_DIR", "IMD_MYSQL_PORT", "IMD_REDIS_PORT", "IMD_S3_PORT", "IMD_SERVICES_BASIC", "IMD_CLUSTER_MASTERS", // deploy/local/services.sh
	"IMD_NGINX_",                                                                  // deploy/local/nginx.sh
	"IMD_DOMAIN", "IMD_CERT_DIR", "IMD_MYSQL_PASSWORD", "IMD_MYSQL_ROOT_PASSWORD", // deploy/compose.yaml
}

func isToolingVar(name string) bool {
	return slices.ContainsFunc(toolingVars, func(v string) bool {
		if strings.HasSuffix(v, "_") {
			return strings.HasPrefix(name, v)
		}
		return name == v
	})
}

// applyEnv sets cfg's keys from the IMD_ variables of environ (os.Environ() form): IMD_ and
// the upper-cased key path joined by '_' sets that key; for a key tagged secret,
// IMD_<PATH>_FILE reads its value from a file instead. An IMD_ variable that names no key is
// an error, so a misspelt override cannot go unnoticed.
func applyEnv(cfg *Config, environ []string) error {
	env := make(map[string]string)
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "IMD_") && !isToolingVar(k) {
			env[k] = v
		}
	}
	used := make(map[string]bool, len(env))
	err := override(reflect.ValueOf(cfg).Elem(), "IMD", env, used)
	var unknown []string
	for k := range env {
		if !used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		err = errors.Join(err, fmt.Errorf("unknown environment variables %s: no config key has these names (`imd check` prints the keys; only secrets take %s)",
			strings.Join(unknown, ", "), fileSuffix))
	}
	return err
}

// override sets scalar fields from env keys named after their yaml path, marking the keys
// it used.
func override(v reflect.Value, prefix string, env map[string]string, used map[string]bool) error {
	t := v.Type()
	var errs []error
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		key := prefix + "_" + strings.ToUpper(name)
		fv := v.Field(i)
		if fv.Kind() == reflect.Struct {
			errs = append(errs, override(fv, key, env, used))
			continue
		}
		raw, ok := env[key]
		used[key] = ok
		if path, isFile := env[key+fileSuffix]; isFile && f.Tag.Get("secret") != "" {
			used[key+fileSuffix] = true
			if ok {
				errs = append(errs, fmt.Errorf("env %s and %s%s both set: use one", key, key, fileSuffix))
				continue
			}
			secret, err := readSecret(path)
			if err != nil {
				errs = append(errs, fmt.Errorf("env %s%s: %w", key, fileSuffix, err))
				continue
			}
			raw, ok = secret, true
		}
		if !ok {
			continue
		}
		if err := setScalar(fv, raw); err != nil {
			errs = append(errs, fmt.Errorf("env %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// readSecret reads a secret file; the line end editors and `echo` leave is not part of it.
func readSecret(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(raw), "\r\n")
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

func setScalar(fv reflect.Value, raw string) error {
	switch fv.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return err
		}
		fv.SetInt(int64(d))
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return err
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return err
		}
		fv.SetInt(n)
	case reflect.Slice:
		if fv.Type().Elem() == reflect.TypeFor[int64]() {
			// IMD_MESSAGE_SYSTEM_ACCOUNTS=1,2
			var ids []int64
			for item := range strings.SplitSeq(raw, ",") {
				if item = strings.TrimSpace(item); item == "" {
					continue
				}
				id, err := strconv.ParseInt(item, 10, 64)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			fv.Set(reflect.ValueOf(ids))
			return nil
		}
		if fv.Type().Elem() != reflect.TypeFor[Tenant]() {
			return errors.New("unsupported list")
		}
		// IMD_TENANTS=name:database,name2:database2:dsn (a DSN holding a comma goes in the YAML)
		var ts []Tenant
		for _, item := range strings.Split(raw, ",") {
			name, rest, _ := strings.Cut(strings.TrimSpace(item), ":")
			db, dsn, _ := strings.Cut(rest, ":")
			ts = append(ts, Tenant{Name: name, Database: db, DSN: dsn})
		}
		fv.Set(reflect.ValueOf(ts))
	default:
		return fmt.Errorf("unsupported kind %s", fv.Kind())
	}
	return nil
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/spf13/pflag"
)

// profileFile is imctl's config file: named profiles of settings, each key a global flag's
// name (http, admin-key, tenant, tcp, tls, sni, insecure, proxy) or mysql-dsn, e.g.
//
//	default: prod
//	profiles:
//	  prod: {http: "https://api.example.com", admin-key: "…", tenant: acme}
//	  dev:  {http: "http://127.0.0.1:8080", admin-key: dev-admin-key}
//
// A setting comes from the command line, else the IMCTL_ variable, else the profile.
type profileFile struct {
	Default  string                       `yaml:"default"`
	Profiles map[string]map[string]string `yaml:"profiles"`
}

// profileKeys are the settings a profile may hold besides the global flags.
var profileKeys = []string{"mysql-dsn"}

// defaultConfigPath is ~/.config/imctl/config.yaml (the user's config directory); "" when
// there is none.
func defaultConfigPath(userConfigDir func() (string, error)) string {
	if userConfigDir == nil {
		return ""
	}
	dir, err := userConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "imctl", "config.yaml")
}

// loadProfile reads the named profile (name "": the file's default, if any) from path. A
// missing file is no profile unless explicit says the path was asked for.
func loadProfile(path, name string, explicit bool, fsFlags *pflag.FlagSet) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		if name != "" {
			return nil, fmt.Errorf("profile %q: no config file %s", name, path)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("imctl config: %w", err)
	}
	var f profileFile
	if err := yaml.UnmarshalWithOptions(raw, &f, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("imctl config %s: %w", path, err)
	}
	if name == "" {
		name = f.Default
	}
	if name == "" {
		return nil, nil
	}
	p, ok := f.Profiles[name]
	if !ok {
		return nil, fmt.Errorf("imctl config %s: no profile %q", path, name)
	}
	for k := range p {
		if fsFlags.Lookup(k) == nil && !slices.Contains(profileKeys, k) {
			return nil, fmt.Errorf("imctl config %s: profile %q: unknown setting %q", path, name, k)
		}
	}
	return p, nil
}

// settings looks a setting up by flag name: the IMCTL_ variable, else the profile.
type settings struct {
	lookupEnv func(string) (string, bool)
	profile   map[string]string
	source    string // where the profile came from, for error messages
}

func (s settings) lookup(name string) (value, from string, ok bool) {
	if v, ok := s.lookupEnv(envName(name)); ok {
		return v, envName(name), true
	}
	if v, ok := s.profile[name]; ok {
		return v, s.source + " " + name, true
	}
	return "", "", false
}

// get is lookup without the source.
func (s settings) get(name string) string {
	v, _, _ := s.lookup(name)
	return strings.TrimSpace(v)
}

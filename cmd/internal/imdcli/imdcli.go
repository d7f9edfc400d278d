// Package imdcli is imd's command line: which command a run asks for, and the three that need
// no server, carried out here (probe, check, --version). cmd/imd only wires the server it is
// handed a configuration for.
package imdcli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/cmd/internal/buildinfo"
)

const usage = `usage: imd [--config F]        run the server
       imd check [--config F]  validate the configuration and print it, secrets masked
       imd probe URL           exit 0 when URL answers 2xx (container healthchecks)
       imd --version`

// Streams are where a command writes: its result, and usage and flag errors.
type Streams struct {
	Out, Err io.Writer
}

// Run carries out args (without the program name) under environ (IMD_* variables, see
// config.Load): probe, check and --version here, anything else by handing the loaded
// configuration to serve, whose error it returns. version is the release stamped at link time.
func Run(args, environ []string, s Streams, version string, serve func(config.Config) error) error {
	if len(args) > 0 && args[0] == "probe" {
		if len(args) != 2 {
			return errors.New("usage: imd probe URL (e.g. http://127.0.0.1:8080/readyz)")
		}
		return httpapi.Probe(args[1])
	}
	check := len(args) > 0 && args[0] == "check"
	if check {
		args = args[1:]
	}
	flags := flag.NewFlagSet("imd", flag.ContinueOnError)
	flags.SetOutput(s.Err)
	flags.Usage = func() {
		fmt.Fprintln(flags.Output(), usage)
		flags.PrintDefaults()
	}
	path := flags.String("config", lookup(environ, "IMD_CONFIG"), "YAML config file (env IMD_CONFIG); IMD_* variables override keys, IMD_<KEY>_FILE reads a secret from a file")
	showVersion := flags.Bool("version", false, "print the build and exit")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		_, err := fmt.Fprintln(s.Out, "imd", buildinfo.Read(version))
		return err
	}
	cfg, err := config.Load(*path, environ)
	if err != nil {
		return err
	}
	if !check {
		return serve(cfg)
	}
	out, err := cfg.Effective()
	if err != nil {
		return err
	}
	_, err = s.Out.Write(out)
	return err
}

// lookup reads key from environ as config.Load reads the IMD_* variables: the last one wins.
func lookup(environ []string, key string) string {
	value := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			value = v
		}
	}
	return value
}

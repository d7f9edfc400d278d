// Command imctl is the admin and client CLI of imd and its load generator.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/imdhq/imd/cmd/imctl/bench"
	"github.com/imdhq/imd/cmd/internal/buildinfo"
)

// version is the release, stamped at link time as imd's is (go tool task build).
var version string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd(deps{
		lookupEnv: os.LookupEnv,
		stdin:     os.Stdin,
		stdout:    os.Stdout,
		stderr:    os.Stderr,
		terminal:  isTerminal(os.Stderr),
		runBench:  bench.Run,
		version:   buildinfo.Read(version).String(),

		userConfigDir: os.UserConfigDir,
	}).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "imctl:", err)
		os.Exit(1)
	}
}

// isTerminal reports whether f is a character device, so progress can be
// redrawn in place rather than logged line by line.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

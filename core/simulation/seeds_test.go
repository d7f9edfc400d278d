package simulation

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// rotationEnv names the key the rotating seeds are derived from (the Taskfile sets it to the
// commit); unset, the test asks git for HEAD itself.
const rotationEnv = "IMD_SIM_ROTATION"

// regressionSeeds are seeds that once found a defect, run on every CI run besides the fixed
// and the rotating ones. 28 found the month-switch window of DESIGN §7.1: a node killed between
// its early switch and its record of it, then a failover losing the switch.
var regressionSeeds = []uint64{28}

// ciSeeds are the seeds of a CI run: 1..fixed, the regression seeds, and rotating seeds derived
// from the commit, so that each commit explores new schedules and a run stays reproducible
// (its seeds are printed, and each replays alone with -sim.seed). Without a commit the rotating
// ones are the next fixed seeds. from says where the rotating ones came from.
func ciSeeds(fixed, rotating int) (seeds []uint64, from string) {
	for i := range fixed {
		seeds = append(seeds, uint64(i+1))
	}
	seeds = append(seeds, regressionSeeds...)
	key := rotationKey()
	if key == "" {
		for i := range rotating {
			seeds = append(seeds, uint64(fixed+i+1))
		}
		return seeds, "no commit known: rotating seeds replaced by fixed ones"
	}
	for i := range rotating {
		seeds = append(seeds, rotatingSeed(key, i))
	}
	return seeds, fmt.Sprintf("fixed 1-%d, regression %v, %d rotating from %.12s", fixed, regressionSeeds, rotating, key)
}

// rotatingSeed is the i-th seed of key: a hash, never 0 (which names the CI seeds).
func rotatingSeed(key string, i int) uint64 {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", key, i))
	return max(binary.BigEndian.Uint64(sum[:8]), 1)
}

// rotationKey is $IMD_SIM_ROTATION, else the commit git reports, else "".
func rotationKey() string {
	if key := strings.TrimSpace(os.Getenv(rotationEnv)); key != "" {
		return key
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Package stages divides imd's CPU profile among the stages of a message's life that issue 16
// names (decode, permission, allocate, group commit, post-commit, deliver, push, search index,
// GC) plus the shared machinery no single message owns, by matching the functions of each
// sample's stack against a documented list of patterns (Stages).
package stages

import (
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Stage is one row of the table.
type Stage struct {
	Name string
	// Doc says what the stage covers, for the table's legend.
	Doc string
	// Pass orders the matching: see Attribute.
	Pass Pass
	// Match is matched against each function name of a stack.
	Match *regexp.Regexp
}

// Pass is when a stage's pattern is tried.
type Pass int

const (
	// Anywhere stages claim a sample if any frame of its stack matches: GC work an
	// allocation triggers is GC's, whoever allocated.
	Anywhere Pass = iota
	// Owner stages claim a sample by its innermost matching frame: the patterns name the
	// functions that own a piece of work, not the helpers they share (the sqlc queries, the
	// Redis client's Do), so that a query is charged to whoever issued it.
	Owner
	// Fallback stages claim what no owner did: goroutines of shared machinery (event loops,
	// the Redis client's pipes, the scheduler).
	Fallback
)

// Other is the stage of samples no pattern claims.
const Other = "other"

const imd = `^github\.com/imdhq/imd/`

// Stages is the attribution used by `imctl bench stages`. Check it against a real profile
// (go tool pprof -top -cum) when the code moves, so that "other" stays small. Among owner
// stages whose patterns match the same frame, the first listed wins.
var Stages = []Stage{
	{"GC", "mark workers, assists, sweeping, scavenging (runtime.gc*, bgsweep, …)", Anywhere,
		regexp.MustCompile(`^runtime\.(gc[A-Z]|bgsweep|bgscavenge|sweepone|deductSweepCredit|markroot|scanobject|scanblock)`)},

	{"search index", "the search feed off the send path and the indexer: core/usecase/longsearch, adapters/bleveindex, bleve, core/domain/fulltext", Owner,
		regexp.MustCompile(imd + `(core/usecase/longsearch|adapters/bleveindex|core/domain/fulltext)\.|^github\.com/blevesearch/`)},
	{"push", "handing a delivered message to the recipients' connections: cluster pushers, the session registry, the frame servers' PushReach, mobile push", Owner,
		regexp.MustCompile(imd + `(core/loop/cluster\.\(\*(Late)?Pusher\)|adapters/protocol/session\.\(\*Registry\)\.(?i:push)|adapters/(tcp/server|websocket)\.\(\*Server\)\.Push|adapters/push\.)`)},
	{"deliver", "deliver consumers: taking jobs, resolving recipients, updating lists (core/loop/deliver)", Owner,
		regexp.MustCompile(imd + `core/loop/deliver\.`)},
	{"group commit", "the MySQL writer: batching, planning and committing message rows (adapters/mysql writer, batchWrite, rowBatch, MessageStore.Append)", Owner,
		regexp.MustCompile(imd + `adapters/mysql\.(\(\*(writer|batchWrite|rowBatch)\)|\(\*MessageStore\)\.(Append|write))`)},
	{"allocate", "msg_id and seq allocation before the COMMIT (core/usecase/send allocate, msgID, reseed)", Owner,
		regexp.MustCompile(imd + `core/usecase/send\.\(\*Service\)\.(allocate|msgID|reseed|reconcileMonths)`)},
	{"permission", "who may send where: conversation resolution, membership, blocks, rate limits", Owner,
		regexp.MustCompile(imd + `(core/usecase/conversation|core/store/membership|core/usecase/directory|adapters/protocol/ratelimit)\.`)},
	{"decode", "frames in, request bodies, draft validation and the ACK out (adapters/protocol, dispatch, frame servers' reads)", Owner,
		regexp.MustCompile(imd + `(adapters/protocol(/dispatch|/frame|/session\.\(\*Conn\))?\.|adapters/tcp/server\.\(\*(events|Server)\)\.(OnTraffic|readFrames)|core/domain/message\.Draft\.)`)},
	{"post-commit", "after the COMMIT: deliver enqueue, route, hot cache, marks, dialogs and other listeners (the rest of core/usecase/send)", Owner,
		regexp.MustCompile(imd + `(core/usecase/send\.|adapters/mysql\.\(\*marker\))`)},

	{"redis client I/O", "rueidis's pipe goroutines reading and writing for every caller", Fallback,
		regexp.MustCompile(`^github\.com/redis/rueidis\.`)},
	{"event loops", "gnet's event loops: polling and writing queued frames (ACKs and pushes) to sockets", Fallback,
		regexp.MustCompile(`^github\.com/panjf2000/gnet/`)},
	{"scheduler", "the Go scheduler finding work and parking threads", Fallback,
		regexp.MustCompile(`^runtime\.(mcall|schedule|findRunnable|park_m|goschedImpl|mstart|sysmon|stopm)$`)},
}

// Row is one stage's share of a profile.
type Row struct {
	Stage string
	Nanos int64
	Share float64 // of the profile's total, 0–1
}

// Table is a profile divided among stages: every stage of the list in order, then Other.
type Table struct {
	Rows  []Row
	Total int64 // nanoseconds of CPU in the profile
	// OtherRoots are the goroutine entry functions (a stack's outermost frame) of the samples
	// left to Other, largest first, at most maxOtherRoots: where to look to shrink it.
	OtherRoots []Row
}

const maxOtherRoots = 8

// Attribute charges each sample to one stage: the first Anywhere stage matching a frame;
// else the Owner stage of its innermost matching frame; else the first Fallback stage
// matching a frame; else Other.
func Attribute(samples []Sample, stages []Stage) Table {
	byName := make(map[string]int, len(stages)+1)
	t := Table{}
	for _, s := range stages {
		byName[s.Name] = len(t.Rows)
		t.Rows = append(t.Rows, Row{Stage: s.Name})
	}
	byName[Other] = len(t.Rows)
	t.Rows = append(t.Rows, Row{Stage: Other})
	roots := make(map[string]int64)
	for _, s := range samples {
		stage := stageOf(s.Stack, stages)
		t.Rows[byName[stage]].Nanos += s.Nanos
		t.Total += s.Nanos
		if stage == Other && len(s.Stack) > 0 {
			roots[s.Stack[len(s.Stack)-1]] += s.Nanos
		}
	}
	for fn, n := range roots {
		t.OtherRoots = append(t.OtherRoots, Row{Stage: fn, Nanos: n, Share: float64(n) / float64(t.Total)})
	}
	slices.SortFunc(t.OtherRoots, func(a, b Row) int { return cmp.Or(cmp.Compare(b.Nanos, a.Nanos), strings.Compare(a.Stage, b.Stage)) })
	t.OtherRoots = t.OtherRoots[:min(len(t.OtherRoots), maxOtherRoots)]
	for i := range t.Rows {
		if t.Total > 0 { // else no samples, and no roots either
			t.Rows[i].Share = float64(t.Rows[i].Nanos) / float64(t.Total)
		}
	}
	return t
}

func stageOf(stack []string, stages []Stage) string {
	if s, ok := anyFrame(stack, stages, Anywhere); ok {
		return s
	}
	for _, fn := range stack {
		for _, s := range stages {
			if s.Pass == Owner && s.Match.MatchString(fn) {
				return s.Name
			}
		}
	}
	if s, ok := anyFrame(stack, stages, Fallback); ok {
		return s
	}
	return Other
}

func anyFrame(stack []string, stages []Stage, pass Pass) (string, bool) {
	for _, s := range stages {
		if s.Pass != pass {
			continue
		}
		for _, fn := range stack {
			if s.Match.MatchString(fn) {
				return s.Name, true
			}
		}
	}
	return "", false
}

// WriteMarkdown writes the table. microsPerMsg is imd's CPU µs per ACKed message over the
// measured window (from /proc, report.Cost): each stage's µs is its share of it. Zero leaves
// the µs column out.
func WriteMarkdown(w io.Writer, title string, t Table, microsPerMsg float64, stages []Stage) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", title)
	fmt.Fprintf(&b, "%.2f s of CPU in the profile", float64(t.Total)/1e9)
	if microsPerMsg > 0 {
		fmt.Fprintf(&b, "; imd %.0f µs of CPU per ACKed message over the window (/proc)", microsPerMsg)
	}
	b.WriteString("\n\n")
	if microsPerMsg > 0 {
		b.WriteString("| stage | share | µs per ACKed msg |\n| --- | --- | --- |\n")
	} else {
		b.WriteString("| stage | share |\n| --- | --- |\n")
	}
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "| %s | %.1f%% |", r.Stage, r.Share*100)
		if microsPerMsg > 0 {
			fmt.Fprintf(&b, " %.0f |", r.Share*microsPerMsg)
		}
		b.WriteString("\n")
	}
	if len(t.OtherRoots) > 0 {
		b.WriteString("\nLargest goroutine entry points in other:")
		for _, r := range t.OtherRoots {
			fmt.Fprintf(&b, " %s %.1f%%;", r.Stage, r.Share*100)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nStages: a sample goes to GC if any frame is GC work, else to the stage owning its innermost matching frame, else to shared machinery, else to other.\n\n")
	for _, s := range stages {
		fmt.Fprintf(&b, "- %s: %s\n", s.Name, s.Doc)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("stages: write: %w", err)
	}
	return nil
}

package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A comment that gives a reason points at a page of this repository, in one of these forms:
//
//	DESIGN §4, DESIGN.md §10.2        a section of docs/DESIGN.md (anchor design-4)
//	PROTOCOL §7, PROTOCOL.md §3–§5    a section of the frozen wire contract, mapped in
//	                                  docs/DESIGN.md (anchor protocol-7)
//	seed 000 §5.3, 003 §14, seeds 003 §20
//	                                  a rule of a source document, restated in
//	                                  docs/DESIGN.md (anchor seed-000-5.3)
//	seed 003 C5                       a hard constraint of seed 003 (anchor seed-003-c5)
//	issue 16, Issue 19 item 2         an issue of the project (anchor issue-16)
//
// After the first section more may follow, each with §, joined by ", ", "/", " and " or a
// range dash, also across a line break inside the same comment: "seed 000 §3.4 rules 2–4,
// §5.3, §10", "003 §2.4/§19", "000 §4.4–4.6", "003 §11–§14". A section may carry a
// qualifier naming a part of it ("rule 5", "items 8–9", "steps 3 and 9", "#4"); the
// section's entry lists its parts, so the qualifier needs no anchor of its own. RFCs
// ("RFC 8446 §5.1") are read and left alone. A § that no document names is a citation of
// the Markdown file it stands in (its own "## 6. …" heading), and an error anywhere else.

// citation is one section, constraint or issue a file refers to.
type citation struct {
	Line   int
	Anchor string // the anchor it must resolve to; "" for RFCs
	Bare   string // the section of a § that names no document
}

// gap is what may stand between two parts of one citation: blanks, or one line break and
// the next line's comment marker.
const gap = `[ \t]*(?:\r?\n[ \t]*(?://+|--|#+|\*|/\*+)?[ \t]*)?`

const number = `\d+(?:\.\d+)*`

var (
	// head is the document a chain of sections belongs to, up to and including its first §.
	head = regexp.MustCompile(`(?:\b(DESIGN|PROTOCOL)(?:\.md)?|(?i:\bseeds?)` + gap + `(000|003)|\b(000|003)|\bRFC[ \t]?\d+)` + gap + `§`)
	// section is one section after its §, with an optional range end and qualifier.
	section = regexp.MustCompile(`^(` + number + `)(?:` + gap + `[–-]` + gap + `§?(` + number + `))?` +
		`(?:[ \t]+(?:rules?|items?|steps?|#)[ \t]*\d+(?:[ \t]*(?:[–-]|,|and)[ \t]*\d+)*)?`)
	// next joins another § of the same document; its separator stays on the line of the
	// section before it, so a blank line or a new paragraph ends the chain.
	next       = regexp.MustCompile(`^[ \t]*(?:,|/|\band\b)?` + gap + `§`)
	constraint = regexp.MustCompile(`(?i:\bseeds?)` + gap + `(003)` + gap + `\b(C\d+)\b`)
	issue      = regexp.MustCompile(`\b(?i:issues?)[ \t]+(\d+)\b`)
	sign       = regexp.MustCompile(`§`)
)

// malformed prefixes the anchor of a § that a document name precedes but no number follows.
const malformed = "malformed:"

// parseCitations reads every citation of text, in order of position.
func parseCitations(text string) []citation {
	type found struct {
		at int
		c  citation
	}
	var all []found
	add := func(at int, c citation) {
		c.Line = strings.Count(text[:at], "\n") + 1
		all = append(all, found{at, c})
	}
	consumed := map[int]bool{} // byte offsets of § signs that belong to a chain
	for _, m := range head.FindAllStringSubmatchIndex(text, -1) {
		doc, rfc := "", false
		switch {
		case m[2] >= 0:
			doc = strings.ToLower(text[m[2]:m[3]]) + "-"
		case m[4] >= 0:
			doc = "seed-" + text[m[4]:m[5]] + "-"
		case m[6] >= 0:
			doc = "seed-" + text[m[6]:m[7]] + "-"
		default:
			rfc = true
		}
		at := m[1]
		for {
			consumed[at-len("§")] = true
			s := section.FindStringSubmatchIndex(text[at:])
			if s == nil {
				add(at, citation{Anchor: malformed + doc})
				break
			}
			for _, g := range [][2]int{{s[2], s[3]}, {s[4], s[5]}} {
				if g[0] < 0 || rfc {
					continue
				}
				add(at+g[0], citation{Anchor: doc + text[at+g[0]:at+g[1]]})
			}
			// A range written with a second § consumed it too.
			if s[4] >= 0 {
				if i := strings.LastIndex(text[at:at+s[4]], "§"); i >= 0 {
					consumed[at+i] = true
				}
			}
			after := at + s[1]
			n := next.FindStringIndex(text[after:])
			if n == nil {
				break
			}
			at = after + n[1]
		}
	}
	for _, m := range constraint.FindAllStringSubmatchIndex(text, -1) {
		add(m[2], citation{Anchor: "seed-" + text[m[2]:m[3]] + "-" + strings.ToLower(text[m[4]:m[5]])})
	}
	for _, m := range issue.FindAllStringSubmatchIndex(text, -1) {
		add(m[2], citation{Anchor: "issue-" + text[m[2]:m[3]]})
	}
	for _, m := range sign.FindAllStringIndex(text, -1) {
		if consumed[m[0]] {
			continue
		}
		bare := "?"
		if s := section.FindStringSubmatchIndex(text[m[1]:]); s != nil {
			bare = text[m[1]+s[2] : m[1]+s[3]]
		}
		add(m[0], citation{Bare: bare})
	}
	slices.SortStableFunc(all, func(a, b found) int { return a.at - b.at })
	out := make([]citation, 0, len(all))
	for _, f := range all {
		if f.c.Anchor == "" && f.c.Bare == "" {
			continue // an RFC section
		}
		out = append(out, f.c)
	}
	return out
}

func TestParseCitations(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []citation
	}{
		{"design", "keeps the order (DESIGN §4).", []citation{{1, "design-4", ""}}},
		{"design file and subsection", "DESIGN.md §10.2 says", []citation{{1, "design-10.2", ""}}},
		{"protocol list", "PROTOCOL.md §3–§5 and PROTOCOL §7", []citation{{1, "protocol-3", ""}, {1, "protocol-5", ""}, {1, "protocol-7", ""}}},
		{"seed", "(seed 000 §5.3)", []citation{{1, "seed-000-5.3", ""}}},
		{"seeds capitalised", "Seed 003 §20.9: only", []citation{{1, "seed-003-20.9", ""}}},
		{"number alone", "(003 §9.2)", []citation{{1, "seed-003-9.2", ""}}},
		{"two documents", "seeds 003 §20 and 000 §12 checked", []citation{{1, "seed-003-20", ""}, {1, "seed-000-12", ""}}},
		{"chain", "(seed 000 §6.6, §8, §10)", []citation{{1, "seed-000-6.6", ""}, {1, "seed-000-8", ""}, {1, "seed-000-10", ""}}},
		{"slash", "seed 003 §2.4/§19", []citation{{1, "seed-003-2.4", ""}, {1, "seed-003-19", ""}}},
		{"range without second sign", "(seed 000 §4.4–4.6, §10)", []citation{{1, "seed-000-4.4", ""}, {1, "seed-000-4.6", ""}, {1, "seed-000-10", ""}}},
		{"range with second sign", "seed 003 §11–§14", []citation{{1, "seed-003-11", ""}, {1, "seed-003-14", ""}}},
		{"qualifiers", "seed 000 §3.4 rules 2–4, §5.3 and §12 items 8–9", []citation{{1, "seed-000-3.4", ""}, {1, "seed-000-5.3", ""}, {1, "seed-000-12", ""}}},
		{"hash item", "000 §12 #4 holds", []citation{{1, "seed-000-12", ""}}},
		{"sentence end", "seed 003 §17. Next", []citation{{1, "seed-003-17", ""}}},
		{"across a Go comment line", "// (seed 000 §3.4,\n// §5.3, §10): route", []citation{{1, "seed-000-3.4", ""}, {2, "seed-000-5.3", ""}, {2, "seed-000-10", ""}}},
		{"document and sign on two lines", "the steps of seed 000\n§9, progress", []citation{{2, "seed-000-9", ""}}},
		{"across an SQL comment line", "-- (seed 000\n-- §6.6): x", []citation{{2, "seed-000-6.6", ""}}},
		{"constraint", "(seed 003 C5): without it", []citation{{1, "seed-003-c5", ""}}},
		{"issues", "(issue 16) and Issue 19 item 2; issue 17 over issue 14", []citation{{1, "issue-16", ""}, {1, "issue-19", ""}, {1, "issue-17", ""}, {1, "issue-14", ""}}},
		{"foreign issues", "gnet issues #496/#749, libfaketime issues #130", nil},
		{"not an issue number", `t.Skip("issues 800k ids")`, nil},
		{"rfc", "RFC 8446 §5.1/§5.2 and RFC 5246 §6.2.3", nil},
		{"bare", "one frame of §2 per message", []citation{{1, "", "2"}}},
		{"bare after a sentence", "(DESIGN §4). See §6.", []citation{{1, "design-4", ""}, {1, "", "6"}}},
		{"blank line ends a chain", "seed 000 §9\n\n§10", []citation{{1, "seed-000-9", ""}, {3, "", "10"}}},
		{"sign without section", "seed 000 §x", []citation{{1, malformed + "seed-000-", ""}}},
		{"words that are not citations", "re-seeded from MySQL; seeds 1–8; design notes; 2000 §", []citation{{1, "", "?"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseCitations(tt.text)
			if !slices.Equal(got, tt.want) {
				t.Errorf("parseCitations(%q)\n got %v\nwant %v", tt.text, got, tt.want)
			}
		})
	}
}

// citedExtensions are the files whose comments and prose may give a reason: sources, docs,
// configuration, the Nginx template, the dashboards and the Python test client.
var citedExtensions = []string{".go", ".js", ".mjs", ".ts", ".py", ".md", ".yaml", ".yml", ".json", ".sql", ".sh", ".template"}

// notSource are the folders .gitignore keeps out of the repository.
var notSource = []string{".git", ".run", "bin", "node_modules", ".idea", ".vscode", "deploy/secrets"}

// thisFile holds the parser's own examples, which cite nothing.
const thisFile = "docs/citations_test.go"

const designDoc = "docs/DESIGN.md"

var anchorTag = regexp.MustCompile(`<a id="([^"]+)"></a>`)

// anchors reads the anchors of docs/DESIGN.md and fails on one defined twice.
func anchors(t *testing.T, root string) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, designDoc))
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, m := range anchorTag.FindAllStringSubmatch(string(text), -1) {
		if set[m[1]] {
			t.Errorf("%s defines anchor %q twice", designDoc, m[1])
		}
		set[m[1]] = true
	}
	return set
}

var numberedHeading = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(?:<a id="[^"]*"></a>)?(` + number + `)\.?[ \t]`)

// ownSections are the numbered headings of a Markdown file, which a bare § in it cites.
func ownSections(text string) map[string]bool {
	set := map[string]bool{}
	for _, m := range numberedHeading.FindAllStringSubmatch(text, -1) {
		set[m[1]] = true
	}
	return set
}

// TestCitationsResolve walks the repository and fails, by file and line, on every citation
// that has no page in it, so a "why" in a comment always leads somewhere a reader can open.
func TestCitationsResolve(t *testing.T) {
	root := ".."
	known := anchors(t, root)
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if slices.Contains(notSource, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.Contains(citedExtensions, filepath.Ext(rel)) || rel == thisFile {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		var own map[string]bool
		if filepath.Ext(rel) == ".md" {
			own = ownSections(string(text))
		}
		for _, c := range parseCitations(string(text)) {
			if msg := unresolved(c, known, own); msg != "" {
				t.Errorf("%s:%d: %s", rel, c.Line, msg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 500 {
		t.Fatalf("read %d files; the walk missed the repository", files)
	}
}

// unresolved says why c leads nowhere, or "" when it resolves.
func unresolved(c citation, known, own map[string]bool) string {
	switch {
	case c.Bare != "" && own == nil:
		return fmt.Sprintf("§%s names no document: write DESIGN §…, PROTOCOL §…, seed 000 §… or seed 003 §…", c.Bare)
	case c.Bare != "" && !own[c.Bare]:
		return fmt.Sprintf("§%s: this file has no section %s", c.Bare, c.Bare)
	case strings.HasPrefix(c.Anchor, malformed):
		return "§ without a section number"
	case c.Anchor != "" && !known[c.Anchor]:
		return fmt.Sprintf("%s has no anchor %q", designDoc, c.Anchor)
	}
	return ""
}

package docs

import (
	"encoding/hex"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/imdhq/imd/clients/go/frame"
)

// protocolConstants reads the command numbers (Cmd…) and result codes (Code…) declared in
// the SDK's wire package (clients/go/wire), which the server uses too, so a command or code
// added there without a word here fails the test.
func protocolConstants(t *testing.T) (commands map[string]string, codes map[string]string) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("../clients/go/wire/*.go")
	if err != nil {
		t.Fatal(err)
	}
	commands, codes = map[string]string{}, map[string]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok || len(spec.Values) != len(spec.Names) {
				return true
			}
			for i, name := range spec.Names {
				lit, ok := spec.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.INT {
					continue
				}
				switch {
				case strings.HasPrefix(name.Name, "Cmd"):
					commands[upperSnake(strings.TrimPrefix(name.Name, "Cmd"))] = lit.Value
				case strings.HasPrefix(name.Name, "Code"):
					codes[name.Name] = lit.Value
				}
			}
			return true
		})
	}
	if len(commands) < 18 || len(codes) < 10 {
		t.Fatalf("found %d commands and %d codes in clients/go/wire; the parser missed some", len(commands), len(codes))
	}
	return commands, codes
}

// upperSnake turns a Go name into the protocol's: SyncInboxFinish → SYNC_INBOX_FINISH,
// GenerateMsgID → GENERATE_MSG_ID.
func upperSnake(s string) string {
	var b strings.Builder
	runes := []rune(s)
	for i, r := range runes {
		if i > 0 && unicode.IsUpper(r) && unicode.IsLower(runes[i-1]) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

func readGuide(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGuideCoversEveryCommandAndCode(t *testing.T) {
	doc := readGuide(t)
	commands, codes := protocolConstants(t)
	for name, num := range commands {
		row := regexp.MustCompile(`(?m)^\| ` + num + ` \| ` + name + ` \|`)
		if !row.MatchString(doc) {
			t.Errorf("command %s (%s) has no row in the command table", name, num)
		}
		section := regexp.MustCompile(`(?m)^### .*\b` + name + ` \(` + num + `\)`)
		if !section.MatchString(doc) {
			t.Errorf("command %s (%s) has no section of its own (### %s (%s))", name, num, name, num)
		}
	}
	for name, num := range codes {
		if !regexp.MustCompile(`(?m)^\| ` + num + ` \|`).MatchString(doc) {
			t.Errorf("code %s (%s) has no row in the code table", name, num)
		}
	}
}

func TestGuideHexExamplesDecode(t *testing.T) {
	blocks := regexp.MustCompile("(?s)```hex\n(.*?)```").FindAllStringSubmatch(readGuide(t), -1)
	want := []struct {
		cmd       uint16
		requestID uint64
		seq       uint32
		body      string
	}{
		{2, 7, 1, `{}`},
		{2, 7, 1, `{"code":0,"msg":"ok","request_id":"7","data":{"server_time":1796169600000}}`},
	}
	if len(blocks) != len(want) {
		t.Fatalf("%d hex examples, want %d", len(blocks), len(want))
	}
	for i, block := range blocks {
		raw, err := hex.DecodeString(strings.Join(strings.Fields(block[1]), ""))
		if err != nil {
			t.Fatalf("example %d: %v", i+1, err)
		}
		f, n, err := frame.Decode(raw)
		if err != nil {
			t.Fatalf("example %d does not decode: %v", i+1, err)
		}
		if n != len(raw) {
			t.Errorf("example %d: %d bytes, the frame is %d", i+1, len(raw), n)
		}
		w := want[i]
		if f.Command != w.cmd || f.RequestID != w.requestID || f.SequenceID != w.seq || string(f.Body) != w.body {
			t.Errorf("example %d = command %d request_id %d sequence_id %d body %s, want %+v", i+1, f.Command, f.RequestID, f.SequenceID, f.Body, w)
		}
	}
}

package mysql

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The path for one tenant past one primary (docs/SCALING.md) shards the month tables and the
// dedup table by topic: it stays open while every statement on them names its topic, so that a
// sharded engine routes it to one shard. TestMonthAndDedupQueriesFilterByTopic reads every such
// statement the server sends — the sqlc queries of sql/queries and sql/legacy and the SQL this
// package writes itself (month DDL, streams) — and fails naming the one that does not.

// topicFreeStatements are the statements on a month table or the dedup table that legitimately
// touch every topic, each with why; docs/SCALING.md lists them with what each becomes on a
// sharded engine. A statement is named "sqlcdb.Name" / "legacydb.Name" (the generated method)
// or "file.go Decl" (the function or constant of this package that holds the SQL).
var topicFreeStatements = map[string]string{
	"sqlcdb.CountMonthRows":              "archive check: counts a whole month table (a scatter summing one count per shard)",
	"sqlcdb.SearchMonth":                 "admin search of one month without a topic (a scatter, merged by created_at)",
	"sqlcdb.MessageByID":                 "READ by msg_id: the id names the month, not the topic (a lookup vindex on message_id, or the topic of the READ's conversation added)",
	"sqlcdb.PurgeExpiredDedup":           "dedup TTL cleanup in expiry order over the whole table (run on every shard)",
	"legacydb.LegacySearch":              "legacy dual-read admin search of one month without a topic (like sqlcdb.SearchMonth)",
	"legacydb.StoredMessageIDs":          "legacy copy: which of a batch's ids a month holds, by primary key (copy runs before a tenant is sharded)",
	"idwatermark.go MaxMessageID":        "start-up id watermark: MAX(message_id) of the newest month (a scatter taking the max)",
	"migration_verify.go monthRowsQuery": "legacy verification streams a whole month by topic order (copy runs before a tenant is sharded)",
	"shardstore.go EnsureTable":          "month DDL: creates next month's table (online DDL on a sharded engine)",
	"monthrows.go CreateTable":           "month DDL: recreates a restored month's table (online DDL)",
	"monthrows.go DropTable":             "month DDL: drops an archived month's table (online DDL)",
}

// notMonthTables are table names this package builds at run time that are no month table.
var notMonthTables = map[string]string{
	"legacy.Table":        "the legacy single table of the migration",
	"legacy.RetiredTable": "the legacy table after the migration",
}

// watchedTable matches a table reference to a month table (the template the adapter rewrites,
// a literal month, or a name built at run time, {expr}) or to the dedup table, with its alias.
var watchedTable = regexp.MustCompile("(?i)\\b(FROM|JOIN|INTO|UPDATE|TABLE(?:\\s+IF(?:\\s+NOT)?\\s+EXISTS)?|LIKE)\\s+`?" +
	"(im_group_messages_tpl|im_group_messages_\\d{6}|im_group_message_dedup|\\{[^}]+\\})`?" +
	"(?:\\s+AS\\s+(\\w+))?")

// boundBy is a parameter: a placeholder, a sqlc argument or list.
const boundBy = `(?:\?|sqlc\.arg\(|sqlc\.slice\(|CAST\(\s*sqlc\.arg\()`

type statement struct{ name, text string }

func TestMonthAndDedupQueriesFilterByTopic(t *testing.T) {
	var all []statement
	for _, f := range []struct{ glob, pkg string }{
		{"../../sql/queries/*.sql", "sqlcdb"},
		{"../../sql/legacy/queries.sql", "legacydb"},
	} {
		all = append(all, sqlcStatements(t, f.glob, f.pkg)...)
	}
	all = append(all, goStatements(t)...)

	seen := map[string]bool{}
	unfiltered := map[string]bool{}
	for _, s := range all {
		if seen[s.name] {
			t.Errorf("%s: two statements of one name; the test cannot tell them apart", s.name)
		}
		seen[s.name] = true
		if refs := watchedRefs(s.text); len(refs) > 0 && !pinsTopic(s.text, refs) {
			unfiltered[s.name] = true
			if _, ok := topicFreeStatements[s.name]; !ok {
				t.Errorf("%s touches a month or the dedup table without filtering by topic; filter it, or list it in topicFreeStatements and docs/SCALING.md with the reason:\n%s",
					s.name, strings.TrimSpace(s.text))
			}
		}
	}
	for name := range topicFreeStatements {
		if !unfiltered[name] {
			t.Errorf("topicFreeStatements lists %s, which is gone or now filters by topic: drop it here and in docs/SCALING.md", name)
		}
	}
	scaling, err := os.ReadFile("../../docs/SCALING.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range topicFreeStatements {
		if !strings.Contains(string(scaling), "`"+name+"`") {
			t.Errorf("docs/SCALING.md does not list %s, which touches every topic", name)
		}
	}
	// The scan must reach each kind of source, or it would pass by reading nothing.
	for _, name := range []string{"sqlcdb.GetMessage", "sqlcdb.LockDedup", "legacydb.CopyLegacyRows", "shardstore.go EnsureTable"} {
		if !seen[name] {
			t.Errorf("the scan did not find %s", name)
		}
	}
}

// TestTopicFilterRule pins the rule on small statements, both ways.
func TestTopicFilterRule(t *testing.T) {
	tests := []struct {
		sql  string
		pins bool
	}{
		{"SELECT * FROM im_group_messages_tpl WHERE topic = ? AND seqid = ?", true},
		{"SELECT * FROM im_group_messages_tpl WHERE message_id = ?", false},
		{"SELECT m.* FROM im_group_messages_tpl AS m WHERE m.topic = sqlc.arg(topic)", true},
		{"SELECT m.* FROM im_group_messages_tpl AS m JOIN x AS w ON w.topic = m.topic", false},
		{"SELECT 1 FROM l WHERE l.topic = ? AND NOT EXISTS (SELECT 1 FROM im_group_messages_tpl AS m WHERE m.topic = l.topic)", true},
		{"SELECT d.seqid FROM (SELECT CAST(sqlc.arg(topic) AS CHAR(64)) AS topic) AS k JOIN im_group_message_dedup AS d ON d.topic = k.topic", true},
		{"INSERT INTO im_group_message_dedup (topic, seqid) VALUES (?, ?)", true},
		{"INSERT INTO im_group_messages_tpl (message_id, seqid) VALUES (?, ?)", false},
		{"UPDATE im_group_message_dedup FORCE INDEX (PRIMARY) SET status = 'queued' WHERE (topic = sqlc.arg(topic))", true},
		{"DELETE FROM im_group_message_dedup WHERE expires_at < ?", false},
		{"SELECT * FROM im_group_messages_tpl WHERE subtopic = ?", false},
		{"SELECT COALESCE(MAX(message_id), 0) FROM {table}", false},
		{"CREATE TABLE IF NOT EXISTS `{name}` LIKE `{month.TemplateTable}`", false},
	}
	for _, tt := range tests {
		refs := watchedRefs(tt.sql)
		if len(refs) == 0 {
			t.Errorf("%q: no watched table found", tt.sql)
			continue
		}
		if got := pinsTopic(tt.sql, refs); got != tt.pins {
			t.Errorf("pinsTopic(%q) = %v, want %v", tt.sql, got, tt.pins)
		}
	}
}

type tableRef struct {
	verb, alias string
	end         int // offset just after the reference
}

func watchedRefs(sql string) []tableRef {
	var refs []tableRef
	for _, m := range watchedTable.FindAllStringSubmatchIndex(sql, -1) {
		table := sql[m[4]:m[5]]
		if expr, ok := strings.CutPrefix(table, "{"); ok {
			if _, other := notMonthTables[strings.TrimSuffix(expr, "}")]; other {
				continue
			}
		}
		alias := table
		if m[6] >= 0 {
			alias = sql[m[6]:m[7]]
		}
		refs = append(refs, tableRef{verb: strings.ToUpper(strings.Fields(sql[m[2]:m[3]])[0]), alias: alias, end: m[1]})
	}
	return refs
}

// pinsTopic reports whether every reference names one topic: an INSERT lists the topic column;
// a read or change compares the table's topic with a parameter, or with the topic of another
// relation that is itself compared with one (a correlated subquery, a derived table of keys).
// DDL never does.
func pinsTopic(sql string, refs []tableRef) bool {
	for _, r := range refs {
		switch r.verb {
		case "TABLE", "LIKE":
			return false
		case "INTO":
			cols := regexp.MustCompile(`^\s*\(([^)]*)\)`).FindStringSubmatch(sql[r.end:])
			if cols == nil || !slices.Contains(splitColumns(cols[1]), "topic") {
				return false
			}
		default:
			if !topicBound(sql, r.alias, true) {
				return false
			}
		}
	}
	return true
}

func splitColumns(list string) []string {
	var cols []string
	for c := range strings.SplitSeq(list, ",") {
		cols = append(cols, strings.ToLower(strings.TrimSpace(c)))
	}
	return cols
}

// topicBound: alias.topic (or a bare topic) equals a parameter, or, when hop, equals the topic
// of another alias bound without a further hop or of a derived table of parameters.
func topicBound(sql, alias string, hop bool) bool {
	col := `(?:\b` + regexp.QuoteMeta(alias) + `\.|(?:^|[^.\w]))topic`
	if regexp.MustCompile(`(?i)` + col + `\s*(?:=|IN\s*\()\s*` + boundBy).MatchString(sql) {
		return true
	}
	if !hop {
		return regexp.MustCompile(`(?i)\)\s+AS\s+`+regexp.QuoteMeta(alias)+`\b`).MatchString(sql) &&
			regexp.MustCompile(`(?i)`+boundBy+`[^,]*\s+AS\s+topic\b`).MatchString(sql)
	}
	q := `\b` + regexp.QuoteMeta(alias) + `\.topic`
	join := regexp.MustCompile(`(?i)(?:` + q + `\s*=\s*(\w+)\.topic|(\w+)\.topic\s*=\s*` + q + `)`)
	for _, m := range join.FindAllStringSubmatch(sql, -1) {
		if other := m[1] + m[2]; other != alias && topicBound(sql, other, false) {
			return true
		}
	}
	return false
}

var sqlcName = regexp.MustCompile(`^--\s*name:\s*(\w+)\s+:\w+`)

// sqlcStatements splits sqlc query files into their named statements, comments left out.
func sqlcStatements(t *testing.T, glob, pkg string) []statement {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no query files at %s: %v", glob, err)
	}
	var out []statement
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cur *statement
		for line := range strings.SplitSeq(string(raw), "\n") {
			if m := sqlcName.FindStringSubmatch(line); m != nil {
				out = append(out, statement{name: pkg + "." + m[1]})
				cur = &out[len(out)-1]
				continue
			}
			if cur == nil || strings.HasPrefix(strings.TrimSpace(line), "--") {
				continue
			}
			cur.text += line + "\n"
			if strings.HasSuffix(strings.TrimSpace(line), ";") {
				cur = nil
			}
		}
	}
	return out
}

// goStatements are the SQL texts of this package's own code: each string literal or
// concatenation holding a table reference, with the operands that are not literals written as
// {expr}. Tests and the generated packages (their SQL is sql/) are left out.
func goStatements(t *testing.T) []statement {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []statement
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			for _, s := range declStrings(decl) {
				if len(watchedRefs(s.text)) > 0 {
					out = append(out, statement{name: path + " " + s.name, text: s.text})
				}
			}
		}
	}
	return out
}

// declStrings are the string texts of one declaration, named by the function or constant.
func declStrings(decl ast.Decl) []statement {
	var out []statement
	collect := func(name string, n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch e := n.(type) {
			case *ast.BinaryExpr:
				if text, ok := concatText(e); ok {
					out = append(out, statement{name: name, text: text})
					return false
				}
			case *ast.BasicLit:
				if text, ok := concatText(e); ok {
					out = append(out, statement{name: name, text: text})
				}
			}
			return true
		})
	}
	switch d := decl.(type) {
	case *ast.FuncDecl:
		collect(d.Name.Name, d)
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			if vs, ok := spec.(*ast.ValueSpec); ok {
				for i, v := range vs.Values {
					collect(vs.Names[i].Name, v)
				}
			}
		}
	}
	return out
}

// concatText is a string literal, or a + chain with at least one, as text.
func concatText(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		l, lok := concatText(e.X)
		r, rok := concatText(e.Y)
		if !lok && !rok {
			return "", false
		}
		if !lok {
			l = "{" + exprText(e.X) + "}"
		}
		if !rok {
			r = "{" + exprText(e.Y) + "}"
		}
		return l + r, true
	}
	return "", false
}

func exprText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprText(e.X) + "." + e.Sel.Name
	}
	return "expr"
}

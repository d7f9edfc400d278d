package openapicheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"strings"
)

// Unreached reads the Go files (tests left out) and returns the struct types with JSON tags that the bindings
// do not check: a named one that no bound type is or holds, and every unnamed one (a body
// type spelled inline cannot be bound, so it must get a name).
func Unreached(files []string, bound []Body) ([]string, error) {
	reached := map[string]bool{}
	for _, b := range bound {
		reach(b.Type, reached)
	}
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		named := map[*ast.StructType]string{}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				if ts, ok := spec.(*ast.TypeSpec); ok {
					if st, ok := ts.Type.(*ast.StructType); ok {
						named[st] = ts.Name.Name
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok || !hasJSONTag(st) {
				return true
			}
			switch name, isNamed := named[st]; {
			case !isNamed:
				out = append(out, fmt.Sprintf("%s: an unnamed struct with JSON tags: name it and bind it", fset.Position(st.Pos())))
			case !reached[name]:
				out = append(out, fmt.Sprintf("%s: %s has JSON tags but no binding reaches it", fset.Position(st.Pos()), name))
			}
			return true
		})
	}
	return out, nil
}

func hasJSONTag(st *ast.StructType) bool {
	for _, f := range st.Fields.List {
		if f.Tag == nil {
			continue
		}
		tag, err := strconv.Unquote(f.Tag.Value)
		if err == nil && strings.Contains(tag, `json:"`) {
			return true
		}
	}
	return false
}

// reach records the names of t and of every named struct type it holds.
func reach(t reflect.Type, seen map[string]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		reach(t.Elem(), seen)
	case reflect.Struct:
		if t.Name() != "" {
			if seen[t.Name()] {
				return
			}
			seen[t.Name()] = true
		}
		for f := range t.Fields() {
			reach(f.Type, seen)
		}
	}
}

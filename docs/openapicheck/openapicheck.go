// Package openapicheck holds Go types to docs/openapi.yaml, the one source of the HTTP APIs'
// JSON shapes: the server's handler types (adapters/http) and the admin client's types
// (cmd/imctl/adminapi) are each bound, in their package's tests, to the body of an operation,
// and Check compares every JSON field, its type, whether it may be absent, and what nests in
// it. It is test support: only tests import it.
package openapicheck

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/imdhq/imd/docs"
)

// jsonMedia is the only media type whose bodies are bound to Go types.
const jsonMedia = "application/json"

// Body binds a Go type to one JSON body of an operation: its request body (Status 0) or its
// answer with Status; or, with Schema set, to a schema of the components that every
// operation shares (the error).
type Body struct {
	Operation string // the operationId
	Status    int
	Schema    string
	Type      reflect.Type
}

// Component binds T to the schema named name under components/schemas.
func Component[T any](name string) Body {
	return Body{Schema: name, Type: reflect.TypeFor[T]()}
}

// Request binds T to the request body of the operation with operationID.
func Request[T any](operationID string) Body {
	return Body{Operation: operationID, Type: reflect.TypeFor[T]()}
}

// Response binds T to the answer of the operation with operationID and the HTTP status.
func Response[T any](operationID string, status int) Body {
	return Body{Operation: operationID, Status: status, Type: reflect.TypeFor[T]()}
}

func (b Body) String() string {
	switch {
	case b.Schema != "":
		return "components/schemas/" + b.Schema
	case b.Status == 0:
		return b.Operation + " request"
	}
	return b.Operation + " " + strconv.Itoa(b.Status)
}

// Operation is one operation of the document.
type Operation struct {
	ID     string
	Method string // upper case, as net/http spells it
	Path   string // as the document spells it: /admin/v1/tenants/{tenant}/users
	op     *v3.Operation
}

// Spec is docs/openapi.yaml, parsed.
type Spec struct {
	ops     []Operation
	schemas map[string]*base.SchemaProxy
}

// Load parses docs/openapi.yaml.
func Load() (*Spec, error) {
	s, err := Parse(docs.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	return s, nil
}

// Parse reads an OpenAPI 3.1 document.
func Parse(document []byte) (*Spec, error) {
	doc, err := libopenapi.NewDocument(document)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("build the model: %w", err)
	}
	s := &Spec{schemas: map[string]*base.SchemaProxy{}}
	if c := m.Model.Components; c != nil && c.Schemas != nil {
		for name, sp := range c.Schemas.FromOldest() {
			s.schemas[name] = sp
		}
	}
	for path, item := range m.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			s.ops = append(s.ops, Operation{ID: op.OperationId, Method: strings.ToUpper(method), Path: path, op: op})
		}
	}
	return s, nil
}

// Operations lists every operation of the document, in its order.
func (s *Spec) Operations() []Operation { return slices.Clone(s.ops) }

// JSONBodies lists every JSON body of a request or a success (2xx) answer of the operations
// whose path starts with prefix: what a side serving those paths must bind. Error answers
// are the shared Error schema, bound once with Component.
func (s *Spec) JSONBodies(prefix string) []Body {
	var out []Body
	for _, o := range s.ops {
		if !strings.HasPrefix(o.Path, prefix) {
			continue
		}
		if o.op.RequestBody != nil && o.op.RequestBody.Content != nil {
			if _, ok := o.op.RequestBody.Content.Get(jsonMedia); ok {
				out = append(out, Body{Operation: o.ID})
			}
		}
		if o.op.Responses == nil || o.op.Responses.Codes == nil {
			continue
		}
		for code, r := range o.op.Responses.Codes.FromOldest() {
			status, err := strconv.Atoi(code)
			if err != nil || status/100 != 2 || r.Content == nil {
				continue
			}
			if _, ok := r.Content.Get(jsonMedia); ok {
				out = append(out, Body{Operation: o.ID, Status: status})
			}
		}
	}
	return out
}

// Unbound returns the JSON bodies under prefix that no binding names, as "operation status".
func (s *Spec) Unbound(prefix string, bound []Body) []string {
	var out []string
	for _, b := range s.JSONBodies(prefix) {
		if !slices.ContainsFunc(bound, func(g Body) bool { return g.Operation == b.Operation && g.Status == b.Status }) {
			out = append(out, b.String())
		}
	}
	return out
}

// Verify checks every body and returns the differences, then the struct types with JSON tags
// of the Go files that no body reaches (see Unreached).
func (s *Spec) Verify(bodies []Body, files []string) ([]string, error) {
	var diffs []string
	for _, b := range bodies {
		diffs = append(diffs, s.Check(b)...)
	}
	unreached, err := Unreached(files, bodies)
	return append(diffs, unreached...), err
}

// Check compares b's Go type with the schema of its body and returns every difference, each
// naming the body and the JSON path where it is.
func (s *Spec) Check(b Body) []string {
	sp, err := s.schemaOf(b)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", b, err)}
	}
	c := &checker{where: b.String()}
	c.compare("$", b.Type, sp)
	return c.diffs
}

func (s *Spec) schemaOf(b Body) (*base.SchemaProxy, error) {
	if b.Schema != "" {
		sp, ok := s.schemas[b.Schema]
		if !ok {
			return nil, fmt.Errorf("no schema %q under components/schemas", b.Schema)
		}
		return sp, nil
	}
	i := slices.IndexFunc(s.ops, func(o Operation) bool { return o.ID == b.Operation })
	if i < 0 {
		return nil, fmt.Errorf("no operation %q in docs/openapi.yaml", b.Operation)
	}
	op := s.ops[i].op
	var content interface {
		Get(string) (*v3.MediaType, bool)
	}
	if b.Status == 0 {
		if op.RequestBody == nil || op.RequestBody.Content == nil {
			return nil, fmt.Errorf("%s %s takes no request body", s.ops[i].Method, s.ops[i].Path)
		}
		content = op.RequestBody.Content
	} else {
		var r *v3.Response
		if op.Responses != nil && op.Responses.Codes != nil {
			r, _ = op.Responses.Codes.Get(strconv.Itoa(b.Status))
		}
		if r == nil || r.Content == nil {
			return nil, fmt.Errorf("%s %s has no %d answer with a body", s.ops[i].Method, s.ops[i].Path, b.Status)
		}
		content = r.Content
	}
	mt, ok := content.Get(jsonMedia)
	if !ok || mt.Schema == nil {
		return nil, fmt.Errorf("no %s schema", jsonMedia)
	}
	return mt.Schema, nil
}

// checker collects the differences of one body.
type checker struct {
	where string
	diffs []string
}

func (c *checker) errorf(path, format string, args ...any) {
	c.diffs = append(c.diffs, fmt.Sprintf("%s: %s: %s", c.where, path, fmt.Sprintf(format, args...)))
}

var (
	rawMessage    = reflect.TypeFor[json.RawMessage]()
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// compare holds the Go type t against the schema at the JSON path.
func (c *checker) compare(path string, t reflect.Type, sp *base.SchemaProxy) {
	sch, err := flatten(sp)
	if err != nil {
		c.errorf(path, "%v", err)
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// Free-form values: the Go side takes any JSON, so the schema may say what it likes.
	if t == rawMessage || t.Kind() == reflect.Interface {
		return
	}
	want := jsonType(t)
	if want == "" {
		c.errorf(path, "Go type %s has no JSON shape this check knows", t)
		return
	}
	if got := sch.types; !slices.Equal(got, []string{want}) {
		c.errorf(path, "Go %s is a JSON %s, the spec says %s", t, want, describe(got))
		return
	}
	switch want {
	case "array":
		if sch.items == nil {
			c.errorf(path, "the spec's array has no items")
			return
		}
		c.compare(path+"[]", t.Elem(), sch.items)
	case "object":
		if t.Kind() == reflect.Map {
			if sch.additional == nil {
				c.errorf(path, "Go map %s, the spec has no additionalProperties", t)
				return
			}
			c.compare(path+"{}", t.Elem(), sch.additional)
			return
		}
		c.compareFields(path, t, sch)
	}
}

// compareFields holds a struct's JSON fields against the schema's properties.
func (c *checker) compareFields(path string, t reflect.Type, sch *shape) {
	fields := jsonFields(t)
	for _, f := range fields {
		p, ok := sch.props[f.name]
		switch {
		case !ok:
			c.errorf(path+"."+f.name, "in Go (%s.%s), not in the spec", t.Name(), f.goName)
			continue
		case f.optional && sch.required[f.name]:
			c.errorf(path+"."+f.name, "optional in Go (omitempty/omitzero), required in the spec")
		case !f.optional && !sch.required[f.name]:
			c.errorf(path+"."+f.name, "required in Go (no omitempty/omitzero), optional in the spec")
		}
		if f.asString {
			continue
		}
		c.compare(path+"."+f.name, f.typ, p)
	}
	names := make([]string, 0, len(sch.props))
	for name := range sch.props {
		if !slices.ContainsFunc(fields, func(f field) bool { return f.name == name }) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		c.errorf(path+"."+name, "in the spec, not in Go (%s)", t)
	}
}

// jsonType is the JSON type encoding/json gives t, "" when it cannot tell.
func jsonType(t reflect.Type) string {
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return ""
	}
	if t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return "string"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string" // base64
		}
		return "array"
	case reflect.Array:
		return "array"
	case reflect.Struct:
		return "object"
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			return "object"
		}
	}
	return ""
}

// field is one JSON member of a Go struct, as encoding/json sees it.
type field struct {
	name, goName string
	typ          reflect.Type
	optional     bool // omitempty or omitzero: the writer may leave it out
	asString     bool // the ,string option
}

// jsonFields lists t's JSON members with encoding/json's rules: exported fields, the tag's
// name or the field's, "-" skipped, untagged embedded structs flattened.
func jsonFields(t reflect.Type) []field {
	var out []field
	for sf := range t.Fields() {
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := sf.Type
		if sf.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, jsonFields(ft)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		options := strings.Split(opts, ",")
		out = append(out, field{
			name: name, goName: sf.Name, typ: ft,
			optional: slices.Contains(options, "omitempty") || slices.Contains(options, "omitzero"),
			asString: slices.Contains(options, "string"),
		})
	}
	return out
}

// shape is a schema with its references, allOf, and nullable or single-branch oneOf/anyOf
// resolved: what a Go type is compared with.
type shape struct {
	types      []string // JSON types, "null" left out
	props      map[string]*base.SchemaProxy
	required   map[string]bool
	items      *base.SchemaProxy
	additional *base.SchemaProxy
}

func flatten(sp *base.SchemaProxy) (*shape, error) {
	out := &shape{props: map[string]*base.SchemaProxy{}, required: map[string]bool{}}
	return out, out.add(sp)
}

func (sh *shape) add(sp *base.SchemaProxy) error {
	sch := sp.Schema()
	if sp.IsTransformedRefWithSiblings() {
		// $ref beside description and the like: the referenced schema and its siblings.
		var err error
		if sch, err = sp.BuildTransformedRefSemanticSchema(nil); err != nil {
			return fmt.Errorf("resolve %s: %w", sp.GetReference(), err)
		}
	}
	if sch == nil {
		return fmt.Errorf("unresolvable schema %s: %v", sp.GetReference(), sp.GetBuildError())
	}
	for _, typ := range sch.Type {
		if typ != "null" && !slices.Contains(sh.types, typ) {
			sh.types = append(sh.types, typ)
		}
	}
	if sch.Properties != nil {
		for name, p := range sch.Properties.FromOldest() {
			sh.props[name] = p
		}
	}
	for _, name := range sch.Required {
		sh.required[name] = true
	}
	if sch.Items != nil && sch.Items.IsA() {
		sh.items = sch.Items.A
	}
	if sch.AdditionalProperties != nil && sch.AdditionalProperties.IsA() {
		sh.additional = sch.AdditionalProperties.A
	}
	for _, part := range sch.AllOf {
		if err := sh.add(part); err != nil {
			return err
		}
	}
	if alts := slices.Concat(sch.OneOf, sch.AnyOf); len(alts) > 0 {
		var kept []*base.SchemaProxy
		for _, alt := range alts {
			if s := alt.Schema(); s == nil || !slices.Equal(s.Type, []string{"null"}) {
				kept = append(kept, alt)
			}
		}
		if len(kept) != 1 {
			return fmt.Errorf("oneOf/anyOf with %d non-null branches: no one Go type matches it", len(kept))
		}
		if err := sh.add(kept[0]); err != nil {
			return err
		}
	}
	if len(sh.types) == 0 && len(sh.props) > 0 {
		sh.types = []string{"object"}
	}
	return nil
}

func describe(types []string) string {
	if len(types) == 0 {
		return "no type"
	}
	return strings.Join(types, " or ")
}

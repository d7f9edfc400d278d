package docs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

func model(t *testing.T) *v3.Document {
	t.Helper()
	doc, err := libopenapi.NewDocument(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build the OpenAPI model: %v", err)
	}
	return &m.Model
}

// TestOpenAPIDocumentIsValid validates the document against the OpenAPI 3.1 schema.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc, err := libopenapi.NewDocument(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.1") {
		t.Fatalf("openapi %s, want 3.1", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s", e.Error())
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s", se.Reason, se.FieldPath)
			}
		}
	}
}

// TestOpenAPIHasNoStrayKeys catches what the OpenAPI schema lets through: an unquoted comma in
// a flow mapping ({description: a, b}) cuts the text and adds a key "b" without a value,
// which JSON Schema and most OpenAPI objects accept as an unknown keyword.
func TestOpenAPIHasNoStrayKeys(t *testing.T) {
	var doc map[string]any
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if child == nil && k != "example" {
					t.Errorf("%s/%s has no value (an unquoted comma before it?)", path, k)
				}
				walk(path+"/"+k, child)
			}
		case []any:
			for i, child := range v {
				walk(fmt.Sprintf("%s/%d", path, i), child)
			}
		}
	}
	walk("", doc)
}

// TestOpenAPIOperationsHaveIDsAndExamples: every operation has a unique operationId; every
// operation with a JSON body (request or success response) shows an example of it, and every
// example validates against its schema.
func TestOpenAPIOperationsHaveIDsAndExamples(t *testing.T) {
	m := model(t)
	sv := schema_validation.NewSchemaValidator()
	ids := map[string]string{}
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			where := strings.ToUpper(method) + " " + path
			switch prev, dup := ids[op.OperationId]; {
			case op.OperationId == "":
				t.Errorf("%s has no operationId", where)
			case dup:
				t.Errorf("%s repeats the operationId %s of %s", where, op.OperationId, prev)
			}
			ids[op.OperationId] = where
			var media []*v3.MediaType
			var names []string
			if op.RequestBody != nil && op.RequestBody.Content != nil {
				if mt, ok := op.RequestBody.Content.Get("application/json"); ok {
					media, names = append(media, mt), append(names, "request")
				}
			}
			if op.Responses != nil && op.Responses.Codes != nil {
				for code, r := range op.Responses.Codes.FromOldest() {
					if !strings.HasPrefix(code, "2") || r.Content == nil {
						continue
					}
					for typ, mt := range r.Content.FromOldest() {
						if typ == "application/json" || mt.Example != nil {
							media, names = append(media, mt), append(names, code+" "+typ)
						}
					}
				}
			}
			for i, mt := range media {
				if mt.Example == nil {
					t.Errorf("%s: %s has no example", where, names[i])
					continue
				}
				if mt.Schema == nil {
					continue
				}
				var ex any
				if err := mt.Example.Decode(&ex); err != nil {
					t.Errorf("%s: %s example: %v", where, names[i], err)
					continue
				}
				if ok, errs := sv.ValidateSchemaObject(mt.Schema.Schema(), ex); !ok {
					for _, e := range errs {
						for _, se := range e.SchemaValidationErrors {
							t.Errorf("%s: %s example: %s at %s", where, names[i], se.Reason, se.FieldPath)
						}
						if len(e.SchemaValidationErrors) == 0 {
							t.Errorf("%s: %s example: %s", where, names[i], e.Error())
						}
					}
				}
			}
			if len(media) == 0 && !slices.Contains([]string{"probes", "objects"}, firstTag(op)) {
				t.Errorf("%s has no JSON body to show an example of", where)
			}
		}
	}
}

func firstTag(op *v3.Operation) string {
	if len(op.Tags) == 0 {
		return ""
	}
	return op.Tags[0]
}

// TestOpenAPIErrorsAreTheErrorSchema: every error answer with a JSON body is the Error schema,
// so the one Go type bound to it (openapicheck.Component) holds every error of every route.
func TestOpenAPIErrorsAreTheErrorSchema(t *testing.T) {
	m := model(t)
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			if op.Responses == nil {
				continue
			}
			answers := map[string]*v3.Response{"default": op.Responses.Default}
			if op.Responses.Codes != nil {
				for code, r := range op.Responses.Codes.FromOldest() {
					if !strings.HasPrefix(code, "2") && !strings.HasPrefix(code, "3") {
						answers[code] = r
					}
				}
			}
			for code, r := range answers {
				if r == nil || r.Content == nil {
					continue
				}
				mt, ok := r.Content.Get("application/json")
				if !ok {
					continue
				}
				if ref := mt.Schema.GetReference(); ref != "#/components/schemas/Error" {
					t.Errorf("%s %s: the %s answer is %q, want the Error schema", strings.ToUpper(method), path, code, ref)
				}
			}
		}
	}
}

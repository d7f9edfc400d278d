package openapicheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const document = `
openapi: 3.1.0
info: {title: t, version: "1"}
components:
  schemas:
    Error:
      type: object
      required: [code, msg]
      properties: {code: {type: integer}, msg: {type: string}}
    Item:
      type: object
      required: [id]
      properties: {id: {type: integer}, tags: {type: array, items: {type: string}}}
paths:
  /admin/v1/items:
    post:
      operationId: addItem
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [name]
              properties:
                name: {type: string}
                note: {type: string}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                required: [item, count, counts]
                properties:
                  item: {$ref: '#/components/schemas/Item'}
                  count: {type: number}
                  counts: {type: object, additionalProperties: {type: integer}}
                  previous: {oneOf: [{$ref: '#/components/schemas/Item'}, {type: 'null'}]}
                  raw: {type: object}
        "400":
          description: bad
          content: {application/json: {schema: {$ref: '#/components/schemas/Error'}}}
  /api/v1/other:
    get:
      operationId: other
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object}}}}
`

type addItem struct {
	Name string `json:"name"`
	Note string `json:"note,omitempty"`
}

type item struct {
	ID   int64    `json:"id"`
	Tags []string `json:"tags,omitempty"`
}

type added struct {
	Item     item            `json:"item"`
	Count    float64         `json:"count"`
	Counts   map[string]int  `json:"counts"`
	Previous *item           `json:"previous,omitempty"`
	Raw      json.RawMessage `json:"raw,omitempty"`
	Local    string          `json:"-"`
}

type embedded struct {
	addItem
}

type errorBody struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

func TestCheck(t *testing.T) {
	spec, err := Parse([]byte(document))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body Body
		want []string // substrings, one per difference
	}{
		{"request matches", Request[addItem]("addItem"), nil},
		{"embedded struct flattens", Request[embedded]("addItem"), nil},
		{"answer with ref, map, nullable oneOf and raw JSON matches", Response[added]("addItem", 200), nil},
		{"component matches", Component[errorBody]("Error"), nil},
		{"field only in Go", Request[struct {
			addItem
			Extra int `json:"extra,omitempty"`
		}]("addItem"), []string{"$.extra: in Go"}},
		{"field only in the spec", Request[struct {
			Name string `json:"name"`
		}]("addItem"), []string{"$.note: in the spec, not in Go"}},
		{"optional in Go, required in the spec", Request[struct {
			Name string `json:"name,omitzero"`
			Note string `json:"note,omitempty"`
		}]("addItem"), []string{"$.name: optional in Go"}},
		{"required in Go, optional in the spec", Request[struct {
			Name string `json:"name"`
			Note string `json:"note"`
		}]("addItem"), []string{"$.note: required in Go"}},
		{"wrong type", Request[struct {
			Name int    `json:"name"`
			Note string `json:"note,omitempty"`
		}]("addItem"), []string{"$.name: Go int is a JSON integer, the spec says string"}},
		{"nested through a ref and an array", Response[struct {
			Item struct {
				ID   int64 `json:"id"`
				Tags []int `json:"tags,omitempty"`
			} `json:"item"`
			Count    float64        `json:"count"`
			Counts   map[string]int `json:"counts"`
			Previous *item          `json:"previous,omitempty"`
			Raw      any            `json:"raw,omitempty"`
		}]("addItem", 200), []string{"$.item.tags[]: Go int is a JSON integer, the spec says string"}},
		{"no such operation", Request[addItem]("nope"), []string{`no operation "nope"`}},
		{"no such answer", Response[addItem]("addItem", 201), []string{"no 201 answer"}},
		{"no such component", Component[errorBody]("Nope"), []string{`no schema "Nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := spec.Check(tt.body)
			if len(got) != len(tt.want) {
				t.Fatalf("Check = %q, want %d differences like %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("difference %d = %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}

func TestUnbound(t *testing.T) {
	spec, err := Parse([]byte(document))
	if err != nil {
		t.Fatal(err)
	}
	got := spec.Unbound("/admin/v1", []Body{Request[addItem]("addItem")})
	if want := []string{"addItem 200"}; !slices.Equal(got, want) {
		t.Errorf("Unbound = %q, want %q (errors and other prefixes left out)", got, want)
	}
}

func TestUnreached(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\n" +
		"type bound struct {\n\tIn inner `json:\"in\"`\n}\n\n" +
		"type inner struct {\n\tX int `json:\"x\"`\n}\n\n" +
		"type loose struct {\n\tY int `json:\"y\"`\n}\n\n" +
		"type plain struct{ Z int }\n\n" +
		"func f() any {\n\treturn struct {\n\t\tW int `json:\"w\"`\n\t}{}\n}\n"
	path := filepath.Join(dir, "p.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	type inner struct{ X int }
	type bound struct{ In inner }
	got, err := Unreached([]string{path, filepath.Join(dir, "ignored_test.go")}, []Body{Request[bound]("op")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.Contains(got[0], "loose has JSON tags but no binding reaches it") ||
		!strings.Contains(got[1], "an unnamed struct with JSON tags") {
		t.Errorf("Unreached = %q, want loose and the unnamed struct", got)
	}
}

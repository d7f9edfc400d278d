package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// What an app brings to ExampleClient: the token its backend minted through imd's admin
// API, and where it keeps the catch-up position between runs.
var (
	appToken string
	saved    *client.State
)

func save(client.State) {}

// The example of clients/go/README.md, word for word (TestREADMEShowsExampleClient): it
// compiles here, against a server of your own it runs.
func ExampleClient() {
	ctx := context.Background()
	c, err := client.Connect(ctx, client.Config{
		Dial:     client.Dialer(client.Options{Addr: "wss://api.example.com/ws"}), // or "host:port" for TCP
		Token:    client.StaticToken(appToken),
		DeviceID: 1,
		Resume:   saved, // where the last run stopped; nil: start now
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	msg := wire.SendMessageRequest{Topic: "grp_7", Type: wire.TypeText, Content: json.RawMessage(`{"text":"hello"}`)}
	if _, err := c.Send(ctx, msg); err != nil { // resent across reconnects until acknowledged
		log.Fatal(err)
	}
	for e := range c.Events() {
		switch e.Kind {
		case client.EventMessage: // live, or missed while away (e.Replayed): each (topic, seq) once
			fmt.Printf("%s #%d from %d: %s\n", e.Message.Topic, e.Message.Seq, e.Message.From, e.Message.Content)
		case client.EventDisconnected: // it reconnects with backoff, then catches up
			log.Println("reconnecting:", e.Err)
		case client.EventSynced: // caught up: keep the position for the next run
			save(c.State())
		}
	}
}

// TestREADMEShowsExampleClient keeps the README's example the body of ExampleClient, so
// the README shows code that compiles.
func TestREADMEShowsExampleClient(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatal("README.md has no ```go block")
	}
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "ExampleClient" {
			continue
		}
		// Positions of a file parsed alone are its offsets plus one.
		body := string(src[fn.Body.Lbrace : fn.Body.Rbrace-1])
		lines := strings.Split(strings.TrimPrefix(body, "\n"), "\n")
		for i, line := range lines {
			lines[i] = strings.TrimPrefix(line, "\t")
		}
		if want := strings.Join(lines, "\n"); block != want {
			t.Errorf("README.md's example differs from ExampleClient's body; the body:\n%s", want)
		}
		return
	}
	t.Fatal("no ExampleClient in readme_example_test.go")
}

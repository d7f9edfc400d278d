package tenant

import (
	"regexp"
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"default", true},
		{"a", true},
		{"bench_1795960440", true},
		{"a" + strings.Repeat("b", 30), true},
		{"a" + strings.Repeat("b", 31), false},
		{"", false},
		{"1abc", false},
		{"_abc", false},
		{"Abc", false},
		{"ab-c", false},
		{"ab}c", false},
		{"ab`c", false},
		{"abc ", false},
		{"äbc", false},
	}
	for _, tt := range tests {
		if got := Valid(tt.name); got != tt.want {
			t.Errorf("Valid(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzValid holds the hand-written check to the pattern it implements.
func FuzzValid(f *testing.F) {
	pattern := regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}$`)
	for _, s := range []string{"default", "a_1", "", "A", "a{b}", strings.Repeat("z", 32)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := Valid(name), pattern.MatchString(name); got != want {
			t.Fatalf("Valid(%q) = %v, the pattern says %v", name, got, want)
		}
	})
}

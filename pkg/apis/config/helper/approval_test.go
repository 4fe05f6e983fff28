package helper

import (
	"testing"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

func TestApproval(t *testing.T) {
	spec := &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{{Name: "canary"}, {Name: "prod"}, {Name: "rest"}}}
	cases := map[string]struct {
		value string
		id    string
		wave  int
		want  bool
	}{
		"the wave, of this rollout":          {"prod@abc", "abc", 1, true},
		"a later wave approves earlier ones": {"rest@abc", "abc", 1, true},
		"an earlier wave does not":           {"canary@abc", "abc", 1, false},
		"another rollout approves nothing":   {"prod@old", "abc", 1, false},
		"an unknown wave approves nothing":   {"prdo@abc", "abc", 1, false},
		"no id":                              {"prod", "abc", 1, false},
		"an empty wave":                      {"@abc", "abc", 0, false},
		"empty":                              {"", "abc", 0, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, ok := ParseApproval(tc.value)
			if got := ok && a.Approves(spec, tc.id, tc.wave); got != tc.want {
				t.Errorf("%q approves wave %d of %s: %v, want %v", tc.value, tc.wave, tc.id, got, tc.want)
			}
			if ok && a.String() != tc.value {
				t.Errorf("%q reads back as %q", tc.value, a.String())
			}
		})
	}
}

func TestSkip(t *testing.T) {
	cases := map[string]struct {
		value string
		want  Skip
		ok    bool
	}{
		"one":                    {"a@id1", Skip{Variants: []string{"a"}, ID: "id1"}, true},
		"several, spaces, twice": {"a, b,,a@id1", Skip{Variants: []string{"a", "b"}, ID: "id1"}, true},
		"no id":                  {"a,b", Skip{}, false},
		"empty id":               {"a@", Skip{}, false},
		"no variant":             {" , @id1", Skip{}, false},
		"empty":                  {"", Skip{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseSkip(tc.value)
			if ok != tc.ok || got.String() != tc.want.String() {
				t.Errorf("ParseSkip(%q) = %v, %v; want %v, %v", tc.value, got, ok, tc.want, tc.ok)
			}
		})
	}
}

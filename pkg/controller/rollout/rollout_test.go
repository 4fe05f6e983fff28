package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

func TestWaves(t *testing.T) {
	canary := configv1alpha2.Wave{Name: "canary", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}}
	eu := configv1alpha2.Wave{Name: "eu", Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu-west", "eu-north"}}}}}
	edgeRepos := &metav1.LabelSelector{MatchLabels: map[string]string{"kind": "edge"}}
	vs := []Variant{
		{Name: "z-eu-canary", Labels: map[string]string{"tier": "canary", "region": "eu-west"}},
		{Name: "b-eu", Labels: map[string]string{"region": "eu-north"}, RepositoryLabels: map[string]string{"kind": "edge"}},
		{Name: "a-us", Labels: map[string]string{"region": "us-east"}, RepositoryLabels: map[string]string{"kind": "edge"}},
		{Name: "c-none"},
	}
	names := func(vs []Variant) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Name)
		}
		return out
	}
	cases := map[string]struct {
		waves    []configv1alpha2.Wave
		want     [][]string
		wantNone []string
	}{
		"the first matching wave takes a variant; a wave without a selector takes the rest": {
			waves: []configv1alpha2.Wave{canary, eu, {Name: "rest"}},
			want:  [][]string{{"z-eu-canary"}, {"b-eu"}, {"a-us", "c-none"}},
		},
		"variants no wave selects are in none, not in the last wave": {
			waves:    []configv1alpha2.Wave{canary, eu},
			want:     [][]string{{"z-eu-canary"}, {"b-eu"}},
			wantNone: []string{"a-us", "c-none"},
		},
		"a wave without a selector leaves nothing to the waves after it": {
			waves: []configv1alpha2.Wave{{Name: "all"}, canary},
			want:  [][]string{{"a-us", "b-eu", "c-none", "z-eu-canary"}, nil},
		},
		"a repositorySelector matches the Repository's labels": {
			waves:    []configv1alpha2.Wave{{Name: "edge", RepositorySelector: edgeRepos}, canary},
			want:     [][]string{{"a-us", "b-eu"}, {"z-eu-canary"}},
			wantNone: []string{"c-none"},
		},
		"with both selectors, a wave takes a variant both match": {
			waves:    []configv1alpha2.Wave{{Name: "edge-eu", Selector: eu.Selector, RepositorySelector: edgeRepos}, {Name: "rest"}},
			want:     [][]string{{"b-eu"}, {"a-us", "c-none", "z-eu-canary"}},
			wantNone: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g, err := Waves(&configv1alpha2.Rollout{Waves: tc.waves}, vs)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, w := range g.Waves {
				got = append(got, names(w))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("waves (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNone, names(g.None)); diff != "" {
				t.Errorf("in no wave (-want +got):\n%s", diff)
			}
		})
	}
	// A wave the caller worked out is taken as it is.
	first := 0
	known := []Variant{{Name: "a-us", Labels: map[string]string{"region": "us-east"}, Wave: &first}}
	g, err := Waves(&configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{canary, {Name: "rest"}}}, known)
	if err != nil || len(g.Waves[0]) != 1 || len(g.Waves[1]) != 0 {
		t.Errorf("a variant whose wave the caller gives as the first went to %v (%v)", g, err)
	}
	bad := &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{{Name: "x", Selector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}}}
	if _, err := Waves(bad, vs); err == nil {
		t.Error("an invalid selector was accepted")
	}
}

func TestMaxConcurrent(t *testing.T) {
	cases := map[string]struct {
		max  *intstr.IntOrString
		n    int
		want int
	}{
		"default: the whole wave":          {n: 7, want: 7},
		"default on an empty wave":         {n: 0, want: 1},
		"a number":                         {max: ptr.To(intstr.FromInt32(3)), n: 7, want: 3},
		"a number above the wave's size":   {max: ptr.To(intstr.FromInt32(30)), n: 7, want: 30},
		"a percentage, rounded up":         {max: ptr.To(intstr.FromString("25%")), n: 7, want: 2},
		"a small percentage is at least 1": {max: ptr.To(intstr.FromString("1%")), n: 7, want: 1},
		"an unparsable value opens one":    {max: ptr.To(intstr.FromString("lots")), n: 7, want: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := MaxConcurrent(configv1alpha2.Wave{MaxConcurrent: tc.max}, tc.n); got != tc.want {
				t.Errorf("MaxConcurrent = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestID(t *testing.T) {
	tmpl := func(v string) []*configv1alpha2.PackageVariantTemplate {
		return []*configv1alpha2.PackageVariantTemplate{{Labels: map[string]string{"app": v}}}
	}
	a := ID(3, tmpl("x"))
	if len(a) != 8 {
		t.Errorf("ID %q is not 8 characters", a)
	}
	if a != ID(3, tmpl("x")) {
		t.Error("the same change has two IDs")
	}
	if a == ID(4, tmpl("x")) || a == ID(3, tmpl("y")) {
		t.Error("another upstream revision or template has the same ID")
	}
}

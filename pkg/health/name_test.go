package health

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestName(t *testing.T) {
	v := Variant{Name: "edge-edge-01-app", Namespace: "fleet", Labels: map[string]string{"region": "eu"}, DownstreamRepo: "edge-01", Package: "app"}
	repo := Repository{Name: "edge-01", Namespace: "fleet", Labels: map[string]string{"cluster": "c-01"}}
	rev := Revision{Name: "edge-01.app.v3", Revision: 3, Published: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	cases := map[string]struct {
		expr, want, wantErr string
	}{
		"from the repository's labels":   {expr: "repository.labels['cluster'] + '-' + variant.downstream.package", want: "c-01-app"},
		"from the variant":               {expr: "variant.name", want: "edge-edge-01-app"},
		"from the revision":              {expr: "variant.downstream.repo + '-v' + string(revision.revision)", want: "edge-01-v3"},
		"a label that is not there":      {expr: "repository.labels['nope']", wantErr: "no such key"},
		"an empty name":                  {expr: "''", wantErr: "names no object"},
		"optional access with a default": {expr: "repository.labels.?nope.orValue(variant.name)", want: "edge-edge-01-app"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n, errs := CompileName(tc.expr, field.NewPath("spec", "rollout", "health", "nameExpr"))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			got, err := n.Name(v, repo, rev)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one with %q", err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || got != tc.want):
				t.Errorf("Name = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	for expr, want := range map[string]string{
		"":                "Required value",
		"variant.name +":  "Syntax error",
		"1 + 2":           "must evaluate to a string, got int",
		"object.metadata": "undeclared reference to 'object'",
	} {
		if _, errs := CompileName(expr, field.NewPath("nameExpr")); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), want) {
			t.Errorf("CompileName(%q) = %v, want an error with %q", expr, errs, want)
		}
	}
}

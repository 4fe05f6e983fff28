package health

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FuzzJudge feeds arbitrary expressions and arbitrary in-cluster objects
// to Compile and Judge. The expressions come from anyone who may create a
// PackageVariantSet, the objects from whatever another controller writes:
// neither may panic the controller, a judgement is always one of the three
// statuses with a message naming the object, and a compile error always
// names the field. `go test` runs only the seeds; run
// `go test -fuzz FuzzJudge ./pkg/health/` to search further.
func FuzzJudge(f *testing.F) {
	argo := `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"app-eu","namespace":"argocd","generation":2},` +
		`"status":{"observedGeneration":2,"sync":{"status":"Synced","revision":"` + commit + `"},"health":{"status":"Healthy"}}}`
	flux := `{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","metadata":{"name":"app","namespace":"flux-system"},` +
		`"status":{"lastAppliedRevision":"main@sha1:` + commit + `","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-11-27T13:00:00Z"}]}}`
	f.Add(argoApplication.Current, "", argoApplication.Failed, argo)
	f.Add(fluxKustomization.Current, "", fluxKustomization.Failed, flux)
	f.Add(byTime.Current, "", "", flux)
	f.Add(configSyncRootSync.Current, "", configSyncRootSync.Failed, `{"apiVersion":"v1","kind":"RootSync","metadata":{"name":"r"},"status":{"sync":{"errorSummary":{"totalCount":"x"}}}}`)
	f.Add("", "", "", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","generation":3},"status":{"observedGeneration":"3"}}`)
	f.Add("object.status.x / 0 == 1", "", "[1,2].all(x, [1,2,3,4,5,6,7,8].all(y, [1,2,3,4,5,6,7,8].all(z, x+y+z > 0)))", `{"kind":"X","metadata":{"name":"n"},"status":{"x":1}}`)
	f.Add("object.metadata.name", "", "1", `{"kind":"X","metadata":{"name":"n"}}`)
	f.Add("timestamp(object.status.t) > revision.published", "", "", `{"kind":"X","metadata":{"name":"n"},"status":{"t":"not a time"}}`)

	fld := field.NewPath("spec", "rollout", "health")
	f.Fuzz(func(t *testing.T, current, inProgress, failed, objJSON string) {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON([]byte(objJSON)); err != nil {
			return // the API server never serves what does not decode
		}
		j, errs := Compile(Exprs{Current: current, InProgress: inProgress, Failed: failed}, fld)
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, fld.String()+".") || e.Error() == "" {
				t.Fatalf("compile error %q does not name a field under %s", e.Error(), fld)
			}
			if strings.Contains(e.Detail, "internal error") {
				t.Fatalf("CEL panicked compiling: %s", e.Detail)
			}
		}
		if j == nil {
			return
		}
		r := j.Judge(obj, rev)
		switch r.Status {
		case Current, InProgress, Failed:
		default:
			t.Fatalf("Judge said %q, not one of the three statuses", r.Status)
		}
		if !strings.HasPrefix(r.Message, describe(obj)) {
			t.Fatalf("Judge's message %q does not start with the object, %q", r.Message, describe(obj))
		}
	})
}

// FuzzName feeds arbitrary name expressions and labels to CompileName and
// Name: no panic, an error names the field or says why, and a name is
// never empty.
func FuzzName(f *testing.F) {
	f.Add("variant.name + '-' + repository.labels['cluster']", "eu-west")
	f.Add("repository.?labels.?cluster.orValue(variant.downstream.repo)", "")
	f.Add("variant.labels['x'].split('')[3]", "ab")
	f.Add("string(revision.revision) + revision.commit", "\xff")
	f.Add("[variant.name].map(x, x + x)[0]", "")

	fld := field.NewPath("spec", "rollout", "health", "nameExpr")
	f.Fuzz(func(t *testing.T, expr, label string) {
		n, errs := CompileName(expr, fld)
		for _, e := range errs {
			if e.Field != fld.String() || strings.Contains(e.Detail, "internal error") {
				t.Fatalf("compile error %q: want one at %s, without a panic", e.Error(), fld)
			}
		}
		if n == nil {
			return
		}
		labels := map[string]string{"cluster": label, label: "v"}
		v := Variant{Name: "pv", Namespace: "ns", Labels: labels, DownstreamRepo: "edge", Package: "app"}
		name, err := n.Name(v, Repository{Name: "edge", Namespace: "ns", Labels: labels}, rev)
		if err == nil && name == "" {
			t.Fatal("Name gave an empty name without an error")
		}
		if err != nil && err.Error() == "" {
			t.Fatal("Name failed without saying why")
		}
	})
}

package health

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

const commit = "6f1c2a9d0e8b7c6a5f4e3d2c1b0a9f8e7d6c5b4a"

var published = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

var rev = Revision{Name: "prod-eu-west.app.packagevariant-2", Revision: 2, Published: published, Commit: commit}

// The README's checks: each ties the object to the revision just
// published, so a cluster healthy on the revision before does not count.
var (
	fluxKustomization = Exprs{
		Current: "object.?status.?lastAppliedRevision.orValue('').endsWith(revision.commit) && " +
			"object.?status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True')",
		Failed: "object.?status.?lastAttemptedRevision.orValue('').endsWith(revision.commit) && " +
			"object.?status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'False' && c.reason != 'Progressing')",
	}
	argoApplication = Exprs{
		Current: "object.?status.?sync.revision.orValue('') == revision.commit && " +
			"object.?status.?sync.status.orValue('') == 'Synced' && object.?status.?health.status.orValue('') == 'Healthy'",
		Failed: "object.?status.?sync.revision.orValue('') == revision.commit && object.?status.?health.status.orValue('') == 'Degraded'",
	}
	configSyncRootSync = Exprs{
		Current: "object.?status.?sync.commit.orValue('') == revision.commit && " +
			"object.?status.?conditions.orValue([]).exists(c, c.type == 'Syncing' && c.status == 'False') && " +
			"object.?status.?sync.?errorSummary.?totalCount.orValue(0) == 0",
		Failed: "object.?status.?sync.commit.orValue('') == revision.commit && object.?status.?sync.?errorSummary.?totalCount.orValue(0) > 0",
	}
	// byTime ties a Kustomization to the revision by when it became Ready.
	byTime = Exprs{
		Current: "object.?status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True' && timestamp(c.lastTransitionTime) > revision.published)",
	}
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	// Through JSON, as the API server's objects come: whole numbers are
	// int64.
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestJudge(t *testing.T) {
	cases := map[string]struct {
		exprs  Exprs
		object string
		want   Status
		msg    string
	}{
		"Flux: applied the revision and Ready": {
			exprs: fluxKustomization,
			object: `{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: app, namespace: flux-system, generation: 3},
			  status: {observedGeneration: 3, lastAppliedRevision: "main@sha1:` + commit + `", conditions: [{type: Ready, status: "True", reason: ReconciliationSucceeded}]}}`,
			want: Current, msg: "Kustomization flux-system/app: current is true",
		},
		"Flux: Ready on the revision before": {
			exprs: fluxKustomization,
			object: `{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: app, namespace: flux-system},
			  status: {lastAppliedRevision: "main@sha1:0000000000000000000000000000000000000000", conditions: [{type: Ready, status: "True"}]}}`,
			want: InProgress, msg: "Kustomization flux-system/app: current is false",
		},
		"Flux: the revision failed its health checks": {
			exprs: fluxKustomization,
			object: `{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: app, namespace: flux-system},
			  status: {lastAttemptedRevision: "main@sha1:` + commit + `", conditions: [{type: Ready, status: "False", reason: HealthCheckFailed}]}}`,
			want: Failed, msg: "Kustomization flux-system/app: failed is true",
		},
		"Flux: no status yet": {
			exprs:  fluxKustomization,
			object: `{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: app, namespace: flux-system}}`,
			want:   InProgress, msg: "Kustomization flux-system/app: current is false",
		},
		"Flux: its controller has not seen the latest spec": {
			exprs: fluxKustomization,
			object: `{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: app, namespace: flux-system, generation: 4},
			  status: {observedGeneration: 3, lastAppliedRevision: "main@sha1:` + commit + `", conditions: [{type: Ready, status: "True"}]}}`,
			want: InProgress, msg: "Kustomization flux-system/app: its controller has observed generation 3 of 4",
		},
		"Argo CD: synced to the commit and Healthy": {
			exprs: argoApplication,
			object: `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: app-eu, namespace: argocd},
			  status: {sync: {status: Synced, revision: "` + commit + `"}, health: {status: Healthy}}}`,
			want: Current, msg: "Application argocd/app-eu: current is true",
		},
		"Argo CD: Degraded on the commit": {
			exprs: argoApplication,
			object: `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: app-eu, namespace: argocd},
			  status: {sync: {status: Synced, revision: "` + commit + `"}, health: {status: Degraded}}}`,
			want: Failed, msg: "Application argocd/app-eu: failed is true",
		},
		"Argo CD: Degraded on an older commit is not this revision's failure": {
			exprs: argoApplication,
			object: `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: app-eu, namespace: argocd},
			  status: {sync: {status: OutOfSync, revision: "1111111111111111111111111111111111111111"}, health: {status: Degraded}}}`,
			want: InProgress, msg: "Application argocd/app-eu: current is false",
		},
		"Config Sync: synced the commit without errors": {
			exprs: configSyncRootSync,
			object: `{apiVersion: configsync.gke.io/v1beta1, kind: RootSync, metadata: {name: root-sync, namespace: config-management-system},
			  status: {sync: {commit: "` + commit + `"}, conditions: [{type: Syncing, status: "False"}]}}`,
			want: Current, msg: "RootSync config-management-system/root-sync: current is true",
		},
		"Config Sync: errors syncing the commit": {
			exprs: configSyncRootSync,
			object: `{apiVersion: configsync.gke.io/v1beta1, kind: RootSync, metadata: {name: root-sync, namespace: config-management-system},
			  status: {sync: {commit: "` + commit + `", errorSummary: {totalCount: 2}}, conditions: [{type: Syncing, status: "False"}]}}`,
			want: Failed, msg: "RootSync config-management-system/root-sync: failed is true",
		},
		"by time: Ready since the publish": {
			exprs: byTime,
			object: `{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: app, namespace: flux-system},
			  status: {conditions: [{type: Ready, status: "True", lastTransitionTime: "2026-11-27T12:05:00Z"}]}}`,
			want: Current, msg: "Kustomization flux-system/app: current is true",
		},
		"by time: Ready before the publish": {
			exprs: byTime,
			object: `{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: app, namespace: flux-system},
			  status: {conditions: [{type: Ready, status: "True", lastTransitionTime: "2026-11-27T11:00:00Z"}]}}`,
			want: InProgress, msg: "Kustomization flux-system/app: current is false",
		},
		"an expression reading a field the object does not have yet waits and says why": {
			exprs:  Exprs{Current: "object.status.health.status == 'Healthy'"},
			object: `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: app-eu, namespace: argocd}}`,
			want:   InProgress, msg: "Application argocd/app-eu: current cannot be evaluated yet: no such key: status",
		},
		"inProgress is tried first": {
			exprs:  Exprs{InProgress: "true", Failed: "true", Current: "true"},
			object: `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: prod}}`,
			want:   InProgress, msg: "ConfigMap prod/settings: inProgress is true",
		},
		"kstatus: a Deployment rolled out": {
			object: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: app, namespace: prod, generation: 2},
			  spec: {replicas: 2}, status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2,
			  conditions: [{type: Available, status: "True"}, {type: Progressing, status: "True", reason: NewReplicaSetAvailable}]}}`,
			want: Current, msg: "Deployment prod/app: Deployment is available. Replicas: 2",
		},
		"kstatus: Stalled is failed": {
			object: `{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: app, namespace: flux-system, generation: 1},
			  status: {observedGeneration: 1, conditions: [{type: Stalled, status: "True", reason: BuildFailed, message: "kustomize build failed"}]}}`,
			want: Failed, msg: "Kustomization flux-system/app: kustomize build failed",
		},
		"kstatus: Reconciling is in progress": {
			object: `{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, metadata: {name: app, namespace: flux-system, generation: 1},
			  status: {observedGeneration: 1, conditions: [{type: Reconciling, status: "True", reason: Progressing, message: "applying"}]}}`,
			want: InProgress, msg: "Kustomization flux-system/app: applying (InProgress)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j, errs := Compile(tc.exprs, field.NewPath("spec", "rollout", "health"))
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			got := j.Judge(object(t, tc.object), rev)
			if diff := cmp.Diff(Result{Status: tc.want, Message: tc.msg}, got); diff != "" {
				t.Errorf("judgement (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompileRefuses(t *testing.T) {
	path := field.NewPath("spec", "rollout", "health")
	cases := map[string]struct {
		exprs Exprs
		want  []string
	}{
		"failed without current": {
			exprs: Exprs{Failed: "true"},
			want:  []string{"spec.rollout.health.current: Required value"},
		},
		"a string where a bool goes": {
			exprs: Exprs{Current: "object.metadata.name + 'x'"},
			want:  []string{"spec.rollout.health.current: Invalid value", "must evaluate to a bool, got string"},
		},
		"an unknown variable": {
			exprs: Exprs{Current: "obj.status.ready"},
			want:  []string{"spec.rollout.health.current: Invalid value", "undeclared reference to 'obj'"},
		},
		"a syntax error": {
			exprs: Exprs{Current: "true", InProgress: "object.status.("},
			want:  []string{"spec.rollout.health.inProgress: Invalid value", "Syntax error"},
		},
		"an expression too long": {
			exprs: Exprs{Current: strings.Repeat("true && ", 700) + "true"},
			want:  []string{"spec.rollout.health.current: Invalid value", "expression code point size exceeds limit"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j, errs := Compile(tc.exprs, path)
			if j != nil || len(errs) == 0 {
				t.Fatalf("compiled; want refused with %v", tc.want)
			}
			text := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("error %q does not say %q", text, w)
				}
			}
		})
	}
}

// TestJudgeIsBounded: an expression built to spin is stopped by the cost
// limit and leaves the object in progress, saying so.
func TestJudgeIsBounded(t *testing.T) {
	j, errs := Compile(Exprs{Current: "object.items.all(a, object.items.all(b, object.items.all(c, a + b + c >= 0)))"}, field.NewPath("h"))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	items := make([]any, 300)
	for i := range items {
		items[i] = int64(i)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"name": "big"}, "items": items}}
	got := j.Judge(obj, rev)
	if got.Status != InProgress || !strings.Contains(got.Message, "exceeded the cost limit") {
		t.Errorf("got %+v; want InProgress, over the cost limit", got)
	}
}

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

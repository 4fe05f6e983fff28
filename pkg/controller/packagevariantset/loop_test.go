package packagevariantset_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/access/accesstest"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

func fleet(n int, env string) map[string]map[string]string {
	repos := map[string]map[string]string{}
	for i := range n {
		repos[fmt.Sprintf("edge-%02d", i)] = repoLabels(env, []string{"eu", "us"}[i%2])
	}
	return repos
}

// regionTemplate computes labels and package context from the selected
// repository with CEL.
func regionTemplate() *configv1alpha2.PackageVariantTemplate {
	return &configv1alpha2.PackageVariantTemplate{
		Labels: map[string]string{"fleet": "edge"},
		LabelExprs: []configv1alpha2.MapExpr{
			{Key: ptr.To("region"), ValueExpr: ptr.To("repository.labels['region']")},
		},
		PackageContext: &configv1alpha2.PackageContextTemplate{
			DataExprs: []configv1alpha2.MapExpr{{Key: ptr.To("site"), ValueExpr: ptr.To("target.name + '-' + packageDefault")}},
		},
	}
}

// TestSetFansOutOverRepositories: a set over N selected repositories makes
// N variants (named as the reference names them, labelled, owned, with the
// finalizer) and N drafts, and reports the counts.
func TestSetFansOutOverRepositories(t *testing.T) {
	const n = 6
	h := newHarness(t, fleet(n, "prod"))
	set := h.CreateSet(newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector(), Template: regionTemplate()}))
	var want, drafts []string
	for i := range n {
		want = append(want, fmt.Sprintf("edge-edge-%02d-app", i))
		drafts = append(drafts, fmt.Sprintf("edge-%02d/app:Draft", i))
	}
	vs := h.waitVariants(want...)
	h.waitDrafts(drafts...)
	h.WaitAllVariantsReady()
	h.WaitSetCondition("edge", "Ready", metav1.ConditionTrue, packagevariantset.ReasonReconciled)
	h.Settle()
	for _, pv := range vs {
		if pv.Labels[configv1alpha2.SetLabel] != string(set.UID) {
			t.Errorf("%s: labels %v", pv.Name, pv.Labels)
		}
		if ref := metav1.GetControllerOf(&pv); ref == nil || ref.UID != set.UID || ref.Kind != "PackageVariantSet" {
			t.Errorf("%s: owner %+v", pv.Name, ref)
		}
		if len(pv.Finalizers) != 1 || pv.Finalizers[0] != configv1alpha1.Finalizer {
			t.Errorf("%s: finalizers %v", pv.Name, pv.Finalizers)
		}
		region := map[bool]string{true: "eu", false: "us"}[strings.HasSuffix(pv.Spec.Downstream.Repo, "0") || strings.HasSuffix(pv.Spec.Downstream.Repo, "2") || strings.HasSuffix(pv.Spec.Downstream.Repo, "4")]
		if pv.Spec.Labels["region"] != region || pv.Spec.Labels["fleet"] != "edge" {
			t.Errorf("%s: spec.labels %v, want region %s", pv.Name, pv.Spec.Labels, region)
		}
		if got := pv.Spec.PackageContext.Data["site"]; got != pv.Spec.Downstream.Repo+"-app" {
			t.Errorf("%s: site %q", pv.Name, got)
		}
	}
	// Readiness changes of variants reach the set batched, a little later.
	h.Eventually("the set to count every variant desired, existing and Ready", func() bool {
		got := h.Set("edge").Status
		return got.DesiredVariants == n && got.ExistingVariants == n && got.ReadyVariants == n
	})
	got := h.Set("edge").Status
	if st := meta.FindStatusCondition(got.Conditions, "Stalled"); st == nil || st.Status != metav1.ConditionFalse || st.Reason != packagevariantset.ReasonValid {
		t.Errorf("Stalled %+v", st)
	}
}

// TestSetFollowsRepositoryLabels: relabelling one repository adds or
// removes exactly one variant; the removed one goes through its deletion
// policy (its draft is deleted).
func TestSetFollowsRepositoryLabels(t *testing.T) {
	repos := fleet(3, "prod")
	repos["edge-99"] = repoLabels("dev", "eu")
	h := newHarness(t, repos)
	h.CreateSet(newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector()}))
	before := h.waitVariants("edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app")
	h.waitDrafts("edge-00/app:Draft", "edge-01/app:Draft", "edge-02/app:Draft")
	h.Settle()

	h.Sim.AddRepository(testNS, "edge-99", true, repoLabels("prod", "eu"))
	after := h.waitVariants("edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app", "edge-edge-99-app")
	h.waitDrafts("edge-00/app:Draft", "edge-01/app:Draft", "edge-02/app:Draft", "edge-99/app:Draft")
	for name, pv := range before {
		if after[name].UID != pv.UID {
			t.Errorf("%s was re-created", name)
		}
	}
	h.Settle()

	h.Sim.AddRepository(testNS, "edge-01", true, repoLabels("dev", "us"))
	h.waitVariants("edge-edge-00-app", "edge-edge-02-app", "edge-edge-99-app")
	h.waitDrafts("edge-00/app:Draft", "edge-02/app:Draft", "edge-99/app:Draft")
	h.Settle()
	if st := h.Set("edge").Status; st.DesiredVariants != 3 || st.ExistingVariants != 3 {
		t.Errorf("counts %+v", st)
	}
}

// TestSetUpdatesVariantsInPlace: a changed CEL expression updates every
// variant's spec without deleting and re-creating it.
func TestSetUpdatesVariantsInPlace(t *testing.T) {
	h := newHarness(t, fleet(3, "prod"))
	h.CreateSet(newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector(), Template: regionTemplate()}))
	before := h.waitVariants("edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app")
	h.WaitAllVariantsReady()
	h.Settle()

	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) {
		s.Targets[0].Template.PackageContext.DataExprs[0].ValueExpr = ptr.To("'site-' + repository.name")
	})
	h.Eventually("every variant's spec to change", func() bool {
		for _, pv := range h.Variants() {
			if pv.Spec.PackageContext.Data["site"] != "site-"+pv.Spec.Downstream.Repo {
				return false
			}
		}
		return true
	})
	h.Settle()
	after := h.Variants()
	for name, pv := range before {
		if after[name].UID != pv.UID {
			t.Errorf("%s was deleted and re-created", name)
		}
	}
	// The variants carry the change into their drafts, in place.
	h.Eventually("drafts to carry the new package context", func() bool {
		for _, pr := range h.Sim.PackageRevisions(testNS) {
			if pr.Spec.RepositoryName == "blueprints" {
				continue
			}
			files, _ := h.Sim.Resources(testNS, pr.Name)
			if !strings.Contains(files["package-context.yaml"], "site: site-"+pr.Spec.RepositoryName) {
				return false
			}
		}
		return true
	})
	h.waitDrafts("edge-00/app:Draft", "edge-01/app:Draft", "edge-02/app:Draft")
}

// TestSetDeletionGarbageCollectsVariants: deleting the set removes its
// variants through their owner references, and each applies its deletion
// policy: drafts deleted, or orphaned.
func TestSetDeletionGarbageCollectsVariants(t *testing.T) {
	for _, policy := range []configv1alpha1.DeletionPolicy{configv1alpha1.DeletionPolicyDelete, configv1alpha1.DeletionPolicyOrphan} {
		t.Run(string(policy), func(t *testing.T) {
			h := newHarness(t, fleet(3, "prod"))
			h.CreateSet(newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector(),
				Template: &configv1alpha2.PackageVariantTemplate{DeletionPolicy: &policy}}))
			h.waitVariants("edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app")
			h.waitDrafts("edge-00/app:Draft", "edge-01/app:Draft", "edge-02/app:Draft")
			h.WaitAllVariantsReady()
			if err := h.Client.ConfigV1alpha2().PackageVariantSets(testNS).Delete(h.Ctx, "edge", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			h.waitVariants()
			if policy == configv1alpha1.DeletionPolicyDelete {
				h.waitDrafts()
				return
			}
			h.waitDrafts("edge-00/app:Draft", "edge-01/app:Draft", "edge-02/app:Draft")
			for _, pr := range h.Sim.PackageRevisions(testNS) {
				if len(pr.OwnerReferences) != 0 {
					t.Errorf("%s still has owners %+v", pr.Name, pr.OwnerReferences)
				}
			}
		})
	}
}

// TestSetTargetsKinds: repositories with packageNames, a repository
// selector with packageNames, and an objectSelector with a name, served
// from an informer for the selected kind.
func TestSetTargetKinds(t *testing.T) {
	sites := []*unstructured.Unstructured{
		site("edge-00", "eu"), site("edge-01", "us"), site("other", "eu"),
	}
	h := newHarness(t, fleet(3, "prod"), sites...)
	h.CreateSet(newSet("list", configv1alpha2.Target{Repositories: []configv1alpha2.RepositoryTarget{
		{Name: "edge-00", PackageNames: []string{"a", "b"}},
		{Name: "edge-01"},
	}}))
	h.CreateSet(newSet("sel", configv1alpha2.Target{RepositorySelector: &configv1alpha2.RepositorySelector{
		LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}},
		PackageNames:  []string{"web"},
	}}))
	h.CreateSet(newSet("obj", configv1alpha2.Target{ObjectSelector: &configv1alpha2.ObjectSelector{
		APIVersion:    "v1",
		Kind:          "ConfigMap",
		LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kind": "site"}},
		Name:          ptr.To("edge-00"),
		PackageNames:  []string{"obj"},
	}}))
	h.waitVariants(
		"list-edge-00-a", "list-edge-00-b", "list-edge-01-app",
		"sel-edge-01-web",
		"obj-edge-00-obj",
	)
	h.waitDrafts("edge-00/a:Draft", "edge-00/b:Draft", "edge-01/app:Draft", "edge-01/web:Draft", "edge-00/obj:Draft")
	h.Settle()

	// A new object that matches the selector but not the name changes nothing;
	// widening the selector to every name adds the matching ones.
	h.UpdateSetSpec("obj", func(s *configv1alpha2.PackageVariantSetSpec) { s.Targets[0].ObjectSelector.Name = nil })
	h.waitVariants(
		"list-edge-00-a", "list-edge-00-b", "list-edge-01-app",
		"sel-edge-01-web",
		"obj-edge-00-obj", "obj-edge-01-obj", "obj-other-obj",
	)
	h.Settle()
	// A new matching object in the cluster reaches the set through the
	// watch on its kind.
	h.CreateObject(site("edge-02", "eu"))
	h.waitVariants(
		"list-edge-00-a", "list-edge-00-b", "list-edge-01-app",
		"sel-edge-01-web",
		"obj-edge-00-obj", "obj-edge-01-obj", "obj-edge-02-obj", "obj-other-obj",
	)
	// "other" is not a Repository: its variant says so, nothing breaks.
	h.Eventually("the variant into a missing repository to report it", func() bool {
		pv := h.Variants()["obj-other-obj"]
		return meta.FindStatusCondition(pv.Status.Conditions, "Ready") != nil
	})
}

func site(name, region string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": name, "namespace": testNS},
		"data":     map[string]interface{}{"region": region},
	}}
	u.SetLabels(map[string]string{"kind": "site"})
	return u
}

// TestSetReportsDuplicateDownstreams: two targets that render the same
// downstream make one variant and a condition naming both targets.
func TestSetReportsDuplicateDownstreams(t *testing.T) {
	h := newHarness(t, fleet(2, "prod"))
	h.CreateSet(newSet("dup",
		configv1alpha2.Target{Repositories: []configv1alpha2.RepositoryTarget{{Name: "edge-00"}}},
		configv1alpha2.Target{RepositorySelector: prodSelector()},
	))
	cond := h.WaitSetCondition("dup", "Stalled", metav1.ConditionTrue, packagevariantset.ReasonValidationError)
	for _, want := range []string{"spec.targets[0] and spec.targets[1] both render downstream edge-00/app"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("message %q does not contain %q", cond.Message, want)
		}
	}
	h.waitVariants("dup-edge-00-app", "dup-edge-01-app")
	h.Settle()
	h.waitDrafts("edge-00/app:Draft", "edge-01/app:Draft")
}

// TestSetNeverDeletesOnFailure: a selector whose kind cannot be read, or a
// template that fails for one target, deletes nothing; fixing it resumes.
func TestSetNeverDeletesOnFailure(t *testing.T) {
	h := newHarness(t, fleet(3, "prod"))
	h.CreateSet(newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector(), Template: regionTemplate()}))
	before := h.waitVariants("edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app")
	h.Settle()

	// An objectSelector of a kind the cluster does not serve.
	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) {
		s.Targets[0].RepositorySelector = nil
		s.Targets[0].ObjectSelector = &configv1alpha2.ObjectSelector{APIVersion: "infra.example.com/v1", Kind: "Site"}
	})
	cond := h.WaitSetCondition("edge", "Stalled", metav1.ConditionTrue, packagevariantset.ReasonNoMatchingTargets)
	for _, want := range []string{"spec.targets[0].objectSelector", "Site", "not served", "nothing was created or deleted"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("message %q does not contain %q", cond.Message, want)
		}
	}
	h.Settle()
	if got := h.Variants(); len(got) != len(before) {
		t.Fatalf("variants %v after a failed selector, want all of %v", names(got), names(before))
	}

	// A template that fails for one repository only (no 'tier' label on it).
	h.Sim.AddRepository(testNS, "edge-01", true, map[string]string{"env": "prod", "region": "us", "tier": "gold"})
	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) {
		s.Targets[0].ObjectSelector = nil
		s.Targets[0].RepositorySelector = &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}
		s.Targets = append(s.Targets, configv1alpha2.Target{
			Repositories: []configv1alpha2.RepositoryTarget{{Name: "edge-00"}},
			Template: &configv1alpha2.PackageVariantTemplate{LabelExprs: []configv1alpha2.MapExpr{
				{Key: ptr.To("tier"), ValueExpr: ptr.To("repository.labels['tier']")},
			}},
		})
	})
	cond = h.WaitSetCondition("edge", "Stalled", metav1.ConditionTrue, packagevariantset.ReasonValidationError)
	for _, want := range []string{"spec.targets[1].template.labelExprs[0].valueExpr", "tier", "none is deleted"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("message %q does not contain %q", cond.Message, want)
		}
	}
	h.Settle()
	if got := h.Variants(); len(got) != len(before) {
		t.Fatalf("variants %v after a failed render, want all of %v", names(got), names(before))
	}

	// Fixed: the stale variant (edge-02) goes, the others stay.
	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) {
		s.Targets[1].Template.LabelExprs[0].ValueExpr = ptr.To("'silver'")
	})
	h.WaitSetCondition("edge", "Ready", metav1.ConditionTrue, packagevariantset.ReasonReconciled)
	h.waitVariants("edge-edge-00-app", "edge-edge-01-app")
}

// TestSetStatusReasons: an invalid set lists every problem; a missing
// upstream says so.
func TestSetStatusReasons(t *testing.T) {
	h := newHarness(t, fleet(1, "prod"))
	bad := newSet("bad", configv1alpha2.Target{}, configv1alpha2.Target{RepositorySelector: prodSelector(),
		Template: &configv1alpha2.PackageVariantTemplate{LabelExprs: []configv1alpha2.MapExpr{{Key: ptr.To("k"), ValueExpr: ptr.To("repository.name +")}}}})
	bad.Spec.Upstream.Repo = ""
	h.CreateSet(bad)
	cond := h.WaitSetCondition("bad", "Stalled", metav1.ConditionTrue, packagevariantset.ReasonValidationError)
	for _, want := range []string{"spec.upstream.repo is a required field", "spec.targets[0] must specify one of", "spec.targets[1].template.labelExprs[0].valueExpr"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("message %q does not contain %q", cond.Message, want)
		}
	}
	missing := newSet("missing", configv1alpha2.Target{RepositorySelector: prodSelector()})
	missing.Spec.Upstream.Package = "nope"
	h.CreateSet(missing)
	cond = h.WaitSetCondition("missing", "Stalled", metav1.ConditionTrue, packagevariantset.ReasonUpstreamNotFound)
	if !strings.Contains(cond.Message, `"nope"`) {
		t.Errorf("message %q does not name the package", cond.Message)
	}
	// Publishing it is all it takes.
	if _, err := h.Sim.AddPublished(testNS, "blueprints", "nope", 1, blueprint("v1\n")); err != nil {
		t.Fatal(err)
	}
	h.WaitSetCondition("missing", "Ready", metav1.ConditionTrue, packagevariantset.ReasonReconciled)
	h.waitVariants("missing-edge-00-nope")
}

// TestSetUpstreamVariable: expressions see the upstream revision; a new
// upstream revision updates the variants that use it.
func TestSetUpstreamVariable(t *testing.T) {
	h := newHarness(t, fleet(2, "prod"))
	h.CreateSet(newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector(),
		Template: &configv1alpha2.PackageVariantTemplate{AnnotationExprs: []configv1alpha2.MapExpr{
			{Key: ptr.To("upstream"), ValueExpr: ptr.To("upstream.name")},
		}}}))
	h.waitVariants("edge-edge-00-app", "edge-edge-01-app")
	h.Eventually("annotations naming v1", func() bool {
		for _, pv := range h.Variants() {
			if pv.Spec.Annotations["upstream"] != "blueprints.app.v1" {
				return false
			}
		}
		return true
	})
	if _, err := h.Sim.AddPublished(testNS, "blueprints", "app", 2, blueprint("v2\n")); err != nil {
		t.Fatal(err)
	}
	h.Eventually("annotations naming v2", func() bool {
		for _, pv := range h.Variants() {
			if pv.Spec.Annotations["upstream"] != "blueprints.app.v2" {
				return false
			}
		}
		return true
	})
}

// TestSetResyncOfSettledSetWritesNothing: a set whose variants are as
// rendered makes no request when it syncs again.
func TestSetResyncOfSettledSetWritesNothing(t *testing.T) {
	h := newHarness(t, fleet(4, "prod"))
	h.CreateSet(newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector(), Template: regionTemplate()}))
	h.waitVariants("edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app", "edge-edge-03-app")
	h.WaitAllVariantsReady()
	h.WaitSetCondition("edge", "Ready", metav1.ConditionTrue, packagevariantset.ReasonReconciled)
	h.Eventually("the ready count", func() bool { return h.Set("edge").Status.ReadyVariants == 4 })
	h.Settle()
	h.Sim.ResetRequests()
	h.resync("edge")
	h.Settle()
	for req, n := range h.Sim.Requests() {
		if strings.Contains(req, "packagevariantsets") || strings.HasPrefix(req, "create") || strings.HasPrefix(req, "update packagevariants ") || strings.HasPrefix(req, "delete") {
			t.Errorf("a settled set made %d %q requests", n, req)
		}
	}
}

// TestSetStatusWriteOnAStaleCache: the set's status write conflicts because
// the controller's cache is behind (someone changed the set's labels and the
// watch has not delivered it). The controller reads the set live and writes
// its status onto it at once, instead of retrying on the stale cache with a
// backoff that grows with every conflict (the soak saw a set's status left
// stale for over three minutes that way).
func TestSetStatusWriteOnAStaleCache(t *testing.T) {
	var once sync.Once
	h := newHarnessWithSim(t, fleet(1, "prod"), func(sim *porchsim.Sim) {
		sim.Clientset().(interface {
			PrependReactor(verb, resource string, reaction clienttesting.ReactionFunc)
		}).PrependReactor("update", "packagevariantsets", func(action clienttesting.Action) (bool, runtime.Object, error) {
			if action.GetSubresource() != "status" {
				return false, nil, nil
			}
			once.Do(func() {
				// From here on the controllers' caches stand still.
				sim.HoldWatchEvents()
				person := sim.ClientsetAs("person").ConfigV1alpha2().PackageVariantSets(testNS)
				set, err := person.Get(context.Background(), "edge", metav1.GetOptions{})
				if err != nil {
					t.Errorf("get the set: %v", err)
					return
				}
				set.Labels = map[string]string{"owner": "someone"}
				if _, err := person.Update(context.Background(), set, metav1.UpdateOptions{}); err != nil {
					t.Errorf("relabel the set: %v", err)
				}
			})
			return false, nil, nil
		})
	})
	person := h.Sim.ClientsetAs("person").ConfigV1alpha2().PackageVariantSets(testNS)
	h.CreateSet(newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector()}))
	h.Eventually("the set's status written while its watch is held", func() bool {
		set, err := person.Get(h.Ctx, "edge", metav1.GetOptions{})
		return err == nil && set.Labels["owner"] == "someone" && meta.FindStatusCondition(set.Status.Conditions, "Ready") != nil
	})
	h.Sim.ReleaseWatchEvents()
	h.Settle()
}

// TestSetCountsVariantsWhoseCloneFailsToRender: a set over a blueprint
// whose own pipeline fails: Porch refuses every clone with the renderer's
// message. Each variant says RenderFailed, and the set counts them as
// existing but not Ready.
func TestSetCountsVariantsWhoseCloneFailsToRender(t *testing.T) {
	const n = 2
	h := newHarnessWithSim(t, fleet(n, "prod"), func(s *porchsim.Sim) {
		files := blueprint("v2, broken\n")
		files["Kptfile"] += `pipeline:
  mutators:
  - name: broken
    image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5
    configMap:
      source: "def broken(:"
`
		if _, err := s.AddPublished(testNS, "blueprints", "app", 2, files); err != nil {
			t.Fatal(err)
		}
	})
	h.CreateSet(newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector()}))
	h.waitVariants("edge-edge-00-app", "edge-edge-01-app")
	h.Eventually("every variant RenderFailed, the set counting none Ready", func() bool {
		for _, pv := range h.Variants() {
			c := meta.FindStatusCondition(pv.Status.Conditions, "Ready")
			if c == nil || c.Reason != "RenderFailed" || !strings.Contains(c.Message, "Porch could not create draft") {
				return false
			}
		}
		st := h.Set("edge").Status
		return st.DesiredVariants == n && st.ExistingVariants == n && st.ReadyVariants == 0
	})
	for _, pv := range h.Variants() {
		if c := meta.FindStatusCondition(pv.Status.Conditions, "Ready"); !strings.Contains(c.Message, "blueprints.app.v2: broken (") {
			t.Errorf("%s: the message does not name the blueprint's functions: %s", pv.Name, c.Message)
		}
	}
}

// TestObjectSelectorReadsOnlyWhatItsServiceAccountMayGet: a target whose
// ServiceAccount may not get a selected object creates and deletes
// nothing, and the set says which object and what to grant; once granted,
// the variants come, carrying the account.
func TestObjectSelectorReadsOnlyWhatItsServiceAccountMayGet(t *testing.T) {
	r := accesstest.New()
	r.Grant(testNS, "selector", "configmaps", "edge-00")
	h := newHarnessWithAccess(t, fleet(2, "prod"), r.Checker(access.Options{}), site("edge-00", "us"), site("edge-01", "eu"))
	set := newSet("obj", configv1alpha2.Target{
		ObjectSelector: &configv1alpha2.ObjectSelector{APIVersion: "v1", Kind: "ConfigMap",
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kind": "site"}}},
		Template: &configv1alpha2.PackageVariantTemplate{ServiceAccountName: ptr.To("selector")},
	})
	h.CreateSet(set)
	c := h.WaitSetCondition("obj", "Ready", metav1.ConditionFalse, packagevariantset.ReasonForbidden)
	for _, want := range []string{`spec.targets[0].objectSelector selects ConfigMap "edge-01"`, `ServiceAccount ` + testNS + `/selector may not get configmaps "edge-01"`, "grant it get on configmaps"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Ready message %q does not say %q", c.Message, want)
		}
	}
	if got := h.Variants(); len(got) != 0 {
		t.Errorf("variants %v made from a selection its account may not read in full", names(got))
	}

	r.Grant(testNS, "selector", "configmaps", "edge-01")
	vs := h.waitVariants("obj-edge-00-app", "obj-edge-01-app")
	for name, pv := range vs {
		if pv.Spec.ServiceAccountName != "selector" {
			t.Errorf("%s: serviceAccountName %q, want the template's", name, pv.Spec.ServiceAccountName)
		}
	}
	h.Settle()
}

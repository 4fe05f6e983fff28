//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// Fleet size of TestFleet: the size the first version was measured at on
// real Porch (22 variants over 20 repositories: 6.8 requests per new
// variant, 1.05 of them events; 13 conflicts on the controller's own status
// writes; converged in 3.4 s).
const (
	fleetRepositories = 20
	// baselineRequestsPerVariant is the first version's figure: it must
	// not rise.
	baselineRequestsPerVariant = 6.8
)

// TestFleet measures the controllers on each backend: a set over 20
// deployment repositories and two hand-written variants into two of them,
// 22 new variants in all. From the API server's audit log it reports the
// requests per new variant by verb and resource, and the conflicts the
// controller met on its own writes (which must be none), and how long the
// fleet took to converge.
func TestFleet(t *testing.T) {
	forEachBackend(t, testFleet)
}

func testFleet(t *testing.T, b *backend) {
	ctx := context.Background()
	ns := createNamespace(t, b.ns("fleet"))
	s := &scenario{b: b, ns: ns, published: map[string]bool{}}
	s.repository(t, repoBlueprints)
	var repos []string
	for i := 1; i <= fleetRepositories; i++ {
		name := fmt.Sprintf("prod-%02d", i)
		repos = append(repos, name)
		s.repository(t, name)
	}
	s.publishBlueprint(t, 1)
	// Porch learns of a Repository by a watch; make sure it serves each one
	// before the measurement starts, so that no request in it is spent
	// waiting for Porch.
	for _, repo := range repos {
		name, _ := createDraft(t, ns, repo, "warm-up", "ws", initTask("makes Porch open the repository"))
		if err := env.admin.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.kube.CoreV1().ConfigMaps(ns).Create(ctx, regionConfigMap(ns), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s.ctrl = startController(t, "controller", ns, "--workers", "4")
	s.ctrl.waitReady(t)

	before, err := env.audit.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	createSet(t, ctx, prodSet(ns, "fleet", &configv1alpha2.PackageVariantTemplate{
		Labels:         map[string]string{"fleet": "prod"},
		PackageContext: &configv1alpha2.PackageContextTemplate{Data: map[string]string{"team": "fleet"}},
		Injectors:      []configv1alpha2.InjectionSelectorTemplate{{Kind: ptr.To("ConfigMap"), Name: ptr.To("region-us-east")}},
	}))
	s.createVariant(t, "extra-1", repos[0], "extra", configv1alpha1.DeletionPolicyDelete, nil)
	s.createVariant(t, "extra-2", repos[1], "extra", configv1alpha1.DeletionPolicyDelete, nil)
	const variants = fleetRepositories + 2

	var last string
	err = wait.PollUntilContextTimeout(ctx, poll, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		pvs, err := env.admin.ConfigV1alpha1().PackageVariants(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, pv := range pvs.Items {
			if meta.IsStatusConditionTrue(pv.Status.Conditions, "Ready") {
				ready++
			}
		}
		last = fmt.Sprintf("%d of %d variants, %d Ready", len(pvs.Items), variants, ready)
		return len(pvs.Items) == variants && ready == variants, nil
	})
	if err != nil {
		t.Fatalf("the fleet did not converge: %v; %s", err, last)
	}
	converged := time.Since(start)
	s.settle(t)

	// Exactly one draft per variant, each its own.
	drafts := map[string]int{}
	for _, pr := range s.revisions(t) {
		if pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft {
			drafts[pr.Spec.RepositoryName+"/"+pr.Spec.PackageName]++
			if metav1.GetControllerOf(&pr) == nil {
				t.Errorf("draft %s has no controller", pr.Name)
			}
		}
	}
	if len(drafts) != variants {
		t.Errorf("%d downstream packages have drafts, want %d: %v", len(drafts), variants, drafts)
	}
	for where, n := range drafts {
		if n != 1 {
			t.Errorf("%s has %d drafts, want 1", where, n)
		}
	}

	events, _, err := env.audit.Since(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	sum := e2eutil.Summarize(e2eutil.Select(events, e2eutil.ByUser(e2eutil.ControllerUser)))
	perVariant, byKind, eventsPerVariant := perNewVariant(sum, variants)
	conflicts := ownConflicts(sum)
	reportf(t, "%s: %d new variants (a set over %d repositories and 2 more) converged in %s and settled %s later",
		b.name, variants, fleetRepositories, converged.Round(10*time.Millisecond), (time.Since(start) - converged).Round(10*time.Millisecond))
	reportf(t, "%s: %.2f requests per new variant (%.2f of them events; the first version made 6.8, 1.05 events):\n%s",
		b.name, perVariant, eventsPerVariant, byKind)
	reportf(t, "%s: conflicts on the controller's own writes: %d (the first version: 13)", b.name, conflicts)
	reportf(t, "%s: every request of the controller meanwhile:\n%s", b.name, sum)
	if perVariant > baselineRequestsPerVariant {
		t.Errorf("%.2f requests per new variant, more than the first version's %.1f:\n%s", perVariant, baselineRequestsPerVariant, byKind)
	}
	if conflicts != 0 {
		t.Errorf("%d conflicts on the controller's own writes, want none:\n%s", conflicts, sum)
	}
	if err := s.ctrl.Stop(); err != nil {
		t.Errorf("stop the controller: %v", err)
	}
}

// perNewVariant divides the controller's requests (lists, watches and
// discovery aside: they do not grow with the variants, and their number
// follows the informers' timing) by the new variants, and says it by verb
// and resource. It counts both loops' requests, the set's creates of its
// variants and its status writes included, as the first version's figure
// did.
func perNewVariant(sum e2eutil.Summary, variants int) (total float64, byKind string, events float64) {
	type line struct {
		kind string
		n    int
	}
	var lines []line
	n := 0
	for r, count := range sum.ByRequest {
		if r.Verb == "list" || r.Verb == "watch" || r.Group == "" && strings.HasPrefix(r.Resource, "/") {
			continue
		}
		lines = append(lines, line{fmt.Sprintf("%s %s", r.Verb, strings.TrimPrefix(r.Group+"/"+r.Resource, "/")), count})
		n += count
		if r.Resource == "events" {
			events += float64(count)
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].kind < lines[j].kind })
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "  %5.2f  %s\n", float64(l.n)/float64(variants), l.kind)
	}
	return float64(n) / float64(variants), strings.TrimRight(b.String(), "\n"), events / float64(variants)
}

// ownConflicts counts the conflicts the controller met writing its own
// objects (PackageVariants and PackageVariantSets): 409 answers.
func ownConflicts(sum e2eutil.Summary) int {
	n := 0
	for r, codes := range sum.ByRequestCode {
		if r.Group == "config.porch.kpt.dev" && (r.Verb == "update" || r.Verb == "patch") {
			n += codes[409]
		}
	}
	return n
}

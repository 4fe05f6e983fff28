package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline"
)

// In an adopting seed (config.adopt) the rollout set starts without
// spec.rollout, its variants following the latest upstream revision, and
// a person adds spec.rollout at a random moment of the chaos phase. In a
// health seed (config.health) its waves are gated on a ConfigMap per site,
// health-<site>, that says which revision the site runs and whether it is
// healthy; people (the sites' deployers) flip it between healthy and
// failed for the published revision while the faults go on, and once they
// stop, every site runs its published revision healthy.

// rolloutHealth is the rollout set's health check: the site's ConfigMap
// names the published revision it runs and says healthy or failed.
func rolloutHealth() *configv1alpha2.RolloutHealth {
	return &configv1alpha2.RolloutHealth{
		APIVersion: "v1",
		Kind:       "ConfigMap",
		NameExpr:   "'health-' + repository.name",
		Current:    "object.data.revision == revision.name && object.data.status == 'healthy'",
		Failed:     "object.data.revision == revision.name && object.data.status == 'failed'",
	}
}

// healthObject is site i's health ConfigMap: it runs revision, status.
func healthObject(i int, revision, status string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]interface{}{"namespace": ns, "name": "health-" + siteName(i)},
		"data":       map[string]interface{}{"revision": revision, "status": status},
	}}
}

// rollingSites is how many sites the rollout set has.
func (w *world) rollingSites() int { return min(w.cfg.sites, rolloutSites) }

// adoptRollout is a person adding spec.rollout to the live rollout set.
func (w *world) adoptRollout() {
	ctx := context.Background()
	sets := w.person.ConfigV1alpha2().PackageVariantSets(ns)
	err := retry(func() error {
		live, err := sets.Get(ctx, rolloutSetName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		live.Spec.Rollout = w.rolloutSet().Spec.Rollout
		_, err = sets.Update(ctx, live, metav1.UpdateOptions{})
		return err
	})
	if err == nil {
		w.count("person", "add spec.rollout to the live rollout set")
	}
	w.logf("person adds spec.rollout to PackageVariantSet %s: %v", rolloutSetName, err)
}

// publishedRollingRevisions are the latest Published revision of each
// rolling site's package, by site index.
func (w *world) publishedRollingRevisions() map[int]string {
	latest := map[int]*porchv1alpha1.PackageRevision{}
	for _, pr := range w.sim.PackageRevisions(ns) {
		if pr.Spec.PackageName != rolloutPkg || helper.IsPlaceholder(&pr) || pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished {
			continue
		}
		for i := range w.rollingSites() {
			if pr.Spec.RepositoryName == siteName(i) && (latest[i] == nil || pr.Spec.Revision > latest[i].Spec.Revision) {
				latest[i] = pr.DeepCopy()
			}
		}
	}
	out := map[int]string{}
	for i, pr := range latest {
		out[i] = pr.Name
	}
	return out
}

// flipHealth is a site's deployer reporting, for one rolling site at
// random, that it runs its published revision healthy (two times in
// three) or failed.
func (w *world) flipHealth(rng *rand.Rand) {
	published := w.publishedRollingRevisions()
	i := rng.IntN(w.rollingSites())
	rev, ok := published[i]
	if !ok {
		return
	}
	status := "healthy"
	if rng.IntN(3) == 0 {
		status = "failed"
	}
	if w.setHealth(i, rev, status) {
		w.count("person", "report a site "+status)
	}
}

// allHealthy is every rolling site's deployer reporting its published
// revision healthy; it reports whether anything changed.
func (w *world) allHealthy() bool {
	changed := false
	for i, rev := range w.publishedRollingRevisions() {
		if w.setHealth(i, rev, "healthy") {
			changed = true
		}
	}
	return changed
}

// setHealth writes site i's health object, when it says something else,
// into the objects the next controllers start with and into the running
// ones' cluster; it reports whether it changed it.
func (w *world) setHealth(i int, revision, status string) bool {
	obj := healthObject(i, revision, status)
	w.mu.Lock()
	idx := -1
	for j, o := range w.objects {
		if o.GetName() == obj.GetName() && o.GetNamespace() == ns && o.GetKind() == "ConfigMap" {
			idx = j
		}
	}
	if idx >= 0 && fmt.Sprint(w.objects[idx].Object["data"]) == fmt.Sprint(obj.Object["data"]) {
		w.mu.Unlock()
		return false
	}
	objects := append([]*unstructured.Unstructured{}, w.objects...)
	if idx >= 0 {
		objects[idx] = obj
	} else {
		objects = append(objects, obj)
	}
	if revision != "" {
		// before any controllers can see it
		w.mon.healthReported(siteName(i), revision)
	}
	w.objects = objects
	w.mu.Unlock()
	// A restart takes its objects from w.objects, perhaps before the line
	// above: the write goes again to controllers that started during it.
	var err error
	for range 3 {
		r := w.currentRunner()
		if err = writeObject(r, obj); err == nil && w.currentRunner() == r {
			break
		}
	}
	w.logf("site %s reports %s %s: %v", siteName(i), revision, status, err)
	return true
}

// writeObject writes an in-cluster object into r's cluster, creating it
// when it is not there yet.
func writeObject(r *offline.Runner, obj *unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := r.UpdateObject(ctx, obj.DeepCopy())
	if apierrors.IsNotFound(err) {
		err = r.CreateObject(ctx, obj.DeepCopy())
	}
	return err
}

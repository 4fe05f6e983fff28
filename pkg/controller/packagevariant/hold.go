package packagevariant

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/handlers"
)

// A PackageVariantSet with spec.rollout takes each of its variants to a
// new upstream revision when the variant's wave opens, by writing the
// revision into the variant's spec.upstream. A variant the set made before
// it had spec.rollout follows the latest revision (no spec.upstream.revision)
// until its wave opens; so that it does not take a new revision the moment
// one is published, the variant controller holds the upgrade of every
// variant that follows the latest revision while its owning set has
// spec.rollout, as spec.upgradePolicy: Manual does: the downstream stays
// on the revision it carries, UpgradeAvailable says what is held and why.
// Creates are not held: a variant with no downstream yet is cloned from the
// latest revision, as a rollout never holds back creates. Removing
// spec.rollout from the set ends the hold: variants that follow the latest
// revision upgrade to it at once, as without a rollout.
//
// The cache of sets and the cache of PackageRevisions are fed by two
// watches, in no order between them: a revision published just after the
// set got spec.rollout can reach this controller before the set's change
// does. So before a variant that follows the latest revision upgrades,
// a set the cache shows without spec.rollout is read from the API server,
// once per set and upstream revision (noRollout): what the server says
// after the revision was seen is at least as new as the revision.

// rolloutSetOf is the name of the PackageVariantSet that controls the
// variant and has spec.rollout, "" when there is none (or the controller
// has no set lister). The claim step's view of the downstream (st) tells
// whether the variant would upgrade, the only case that reads the set live.
func (c *Controller) rolloutSetOf(ctx context.Context, st *state) (string, error) {
	pv := st.pv
	ref := metav1.GetControllerOfNoCopy(pv)
	if c.setLister == nil || ref == nil || ref.Kind != "PackageVariantSet" || ref.APIVersion != configv1alpha2.SchemeGroupVersion.String() {
		return "", nil
	}
	if set, err := c.setLister.PackageVariantSets(pv.Namespace).Get(ref.Name); err == nil && set.UID == ref.UID && set.Spec.Rollout != nil {
		return set.Name, nil
	}
	if !followsLatest(pv) || manualUpgrades(pv) || !st.wouldUpgrade() || c.noRollout.confirmed(ref.UID, st.upstream.Name) {
		return "", nil
	}
	set, err := c.client.ConfigV1alpha2().PackageVariantSets(pv.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading PackageVariantSet %s, which controls the variant, to learn whether it holds upgrades for its rollout: %w", ref.Name, err)
	case set.UID != ref.UID:
		return "", nil
	case set.Spec.Rollout != nil:
		return set.Name, nil
	}
	c.noRollout.confirm(ref.UID, st.upstream.Name)
	return "", nil
}

// followsLatest reports whether the variant takes the latest upstream
// revision (neither a revision nor a workspace is pinned).
func followsLatest(pv *configv1alpha1.PackageVariant) bool {
	return pv.Spec.Upstream.Revision == 0 && pv.Spec.Upstream.WorkspaceName == ""
}

// setsWithoutRollout remembers, per set UID, the upstream revision for
// which the API server said the set had no spec.rollout.
type setsWithoutRollout struct {
	mu   sync.Mutex
	seen map[types.UID]string
}

func (s *setsWithoutRollout) confirmed(set types.UID, upstream string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[set] == upstream
}

func (s *setsWithoutRollout) confirm(set types.UID, upstream string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[types.UID]string{}
	}
	s.seen[set] = upstream
}

func (s *setsWithoutRollout) forget(set types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.seen, set)
}

// rolloutHoldMessage is the second half of the UpgradeAvailable message of
// a variant held by its set's rollout.
func rolloutHoldMessage(set string) string {
	return fmt.Sprintf("PackageVariantSet %s rolls upstream changes out in waves (spec.rollout): it sets this variant's spec.upstream.revision when the variant's wave opens (see the set's status.rollout)", set)
}

// handleSetUpdate queues the variants of a set whose spec.rollout came or
// went: their upgrades are held from now on, or no longer.
func (c *Controller) handleSetUpdate(oldObj, newObj interface{}) {
	o, ok1 := oldObj.(*configv1alpha2.PackageVariantSet)
	n, ok2 := newObj.(*configv1alpha2.PackageVariantSet)
	if !ok1 || !ok2 || (o.Spec.Rollout == nil) == (n.Spec.Rollout == nil) {
		return
	}
	pvs, err := c.pvLister.PackageVariants(n.Namespace).List(labels.SelectorFromSet(labels.Set{configv1alpha2.SetLabel: string(n.UID)}))
	if err != nil {
		return
	}
	for _, pv := range pvs {
		c.queue.Add(cache.MetaObjectToName(pv))
	}
}

// handleSetDelete forgets what the API server said of a deleted set.
func (c *Controller) handleSetDelete(obj interface{}) {
	if set, ok := handlers.Object[*configv1alpha2.PackageVariantSet](obj); ok {
		c.noRollout.forget(set.UID)
	}
}

package porchsim

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// orphans tells whether a delete orphans the object's dependents.
func orphans(opts metav1.DeleteOptions) bool {
	return opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationOrphan
}

// deleteEntryLocked deletes a stored object: one with finalizers only gets
// its deletionTimestamp (and a generation bump, as the API server does); the
// others go at once.
func (s *store) deleteEntryLocked(resource string, e *entry, orphan bool) {
	e.orphan = e.orphan || orphan
	m := mustAccessor(e.obj)
	if len(m.GetFinalizers()) == 0 {
		s.removeLocked(resource, e, e.obj.DeepCopyObject())
		return
	}
	if m.GetDeletionTimestamp() != nil {
		return
	}
	obj := e.obj.DeepCopyObject()
	nm := mustAccessor(obj)
	ts := now()
	zero := int64(0)
	nm.SetDeletionTimestamp(&ts)
	nm.SetDeletionGracePeriodSeconds(&zero)
	nm.SetGeneration(m.GetGeneration() + 1)
	s.replaceLocked(resource, e, obj)
}

// collectGarbageLocked runs the garbage collector for a removed owner, in the
// background-propagation style but synchronously (the dependents' events
// follow the owner's DELETED event): a dependent that another existing owner
// still holds loses the dangling owner reference; any other dependent is
// deleted, except the PackageRevisions Porch refuses to delete (Published
// ones, and upstreams of other revisions): they keep the dangling
// reference. With orphan every dependent only loses
// the reference.
//
// Dependents are visited by kind (in the order of kinds), then by name. The
// list is taken once, up front: a cascade only removes objects and owner
// references, so each dependent is looked up again and skipped if it is gone
// or no longer names the owner.
func (s *store) collectGarbageLocked(namespace string, owner types.UID, orphan bool) {
	for _, ref := range s.dependentsLocked(namespace, owner) {
		e, ok := s.objects[ref.resource][ref.key]
		if !ok {
			continue // removed by the cascade meanwhile
		}
		refs := mustAccessor(e.obj).GetOwnerReferences()
		i := slices.IndexFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == owner })
		if i < 0 {
			continue
		}
		rest := slices.Delete(slices.Clone(refs), i, i+1)
		if orphan || s.anyOwnerExistsLocked(rest) {
			obj := e.obj.DeepCopyObject()
			if len(rest) == 0 {
				rest = nil
			}
			mustAccessor(obj).SetOwnerReferences(rest)
			s.replaceLocked(ref.resource, e, obj)
			continue
		}
		s.collectLocked(ref.resource, e)
	}
}

// collectIfOwnersGoneLocked is the garbage collector looking at an object a
// request just wrote, as the Kubernetes collector looks at every object it
// sees, not only at the dependents of an owner being deleted: an object
// whose owner references all name UIDs that no longer exist (the owner was
// deleted before the object was made, say by a controller working from a
// stale cache) is deleted; one that some existing owner still holds loses
// the dangling references. PackageRevisions Porch refuses to delete keep
// them, as in collectGarbageLocked. Gone means deleted from this Sim: the
// collector confirms an owner's absence where it lives, and the Sim knows
// only its own objects. Objects placed by the Sim's helpers
// (Import, Restore, AddPublished) are left as given: a snapshot may bring
// owners after their dependents.
func (s *store) collectIfOwnersGoneLocked(resource, namespace, name string) {
	e, ok := s.objects[resource][objectKey{namespace, name}]
	if !ok {
		return
	}
	refs := mustAccessor(e.obj).GetOwnerReferences()
	var live []metav1.OwnerReference
	for _, r := range refs {
		// Only an owner the Sim itself deleted is known to be gone; a UID
		// it never held belongs to another server (porchsim-apiserver's
		// revisions are owned by variants in the kube-apiserver) and is
		// not the Sim's to judge.
		if _, gone := s.deletedUIDs[r.UID]; !gone {
			live = append(live, r)
		}
	}
	if len(live) == len(refs) {
		return
	}
	if len(live) > 0 {
		obj := e.obj.DeepCopyObject()
		mustAccessor(obj).SetOwnerReferences(live)
		s.replaceLocked(resource, e, obj)
		return
	}
	s.collectLocked(resource, e)
}

// collectLocked deletes a dependent whose owners are gone, unless the
// server refuses to delete it (Porch: Published revisions, and upstreams of
// other revisions): then it keeps its dangling owner references.
func (s *store) collectLocked(resource string, e *entry) {
	if s.rules.keep != nil && s.rules.keep(e.obj) {
		return
	}
	s.deleteEntryLocked(resource, e, false)
}

func (s *store) anyOwnerExistsLocked(refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if _, ok := s.uids[r.UID]; ok {
			return true
		}
	}
	return false
}

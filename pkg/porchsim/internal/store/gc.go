package store

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// orphans tells whether a delete orphans the object's dependents.
func orphans(opts metav1.DeleteOptions) bool {
	return opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationOrphan
}

// DeleteEntryLocked deletes a stored object: one with finalizers only gets
// its deletionTimestamp (and a generation bump, as the API server does); the
// others go at once.
func (s *Store) DeleteEntryLocked(resource string, e *Entry, orphan bool) {
	e.orphan = e.orphan || orphan
	m := MustAccessor(e.obj)
	if len(m.GetFinalizers()) == 0 {
		s.removeLocked(resource, e, e.obj.DeepCopyObject())
		return
	}
	if m.GetDeletionTimestamp() != nil {
		return
	}
	obj := e.obj.DeepCopyObject()
	nm := MustAccessor(obj)
	ts := Now()
	zero := int64(0)
	nm.SetDeletionTimestamp(&ts)
	nm.SetDeletionGracePeriodSeconds(&zero)
	nm.SetGeneration(m.GetGeneration() + 1)
	s.ReplaceLocked(resource, e, obj)
}

// collectGarbageLocked runs the garbage collector for a removed owner, in the
// background-propagation style but synchronously (the dependents' events
// follow the owner's DELETED event): a dependent that another existing owner
// still holds loses the dangling owner reference; any other dependent is
// deleted, except those the server refuses to delete (Rules.Keep; Porch:
// Published revisions, and upstreams of other revisions): they keep the
// dangling reference. With orphan every dependent only loses the reference.
//
// Dependents are visited by kind (in the order New was given them), then
// by name. The
// list is taken once, up front: a cascade only removes objects and owner
// references, so each dependent is looked up again and skipped if it is gone
// or no longer names the owner.
func (s *Store) collectGarbageLocked(namespace string, owner types.UID, orphan bool) {
	for _, ref := range s.dependentsLocked(namespace, owner) {
		e, ok := s.objects[ref.Resource][ref.Key]
		if !ok {
			continue // removed by the cascade meanwhile
		}
		refs := MustAccessor(e.obj).GetOwnerReferences()
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
			MustAccessor(obj).SetOwnerReferences(rest)
			s.ReplaceLocked(ref.Resource, e, obj)
			continue
		}
		s.collectLocked(ref.Resource, e)
	}
}

// CollectIfOwnersGoneLocked is the garbage collector looking at an object a
// request just wrote, as the Kubernetes collector looks at every object it
// sees, not only at the dependents of an owner being deleted: an object
// whose owner references all name UIDs that no longer exist (the owner was
// deleted before the object was made, say by a controller working from a
// stale cache) is deleted; one that some existing owner still holds loses
// the dangling references. Objects the server refuses to delete keep them,
// as in collectGarbageLocked. Gone means deleted from this store: the
// collector confirms an owner's absence where it lives, and the store knows
// only its own objects. The server calls it after a request's write;
// objects it places itself (porchsim's Import, Restore, AddPublished) are
// left as given: a snapshot may bring owners after their dependents.
func (s *Store) CollectIfOwnersGoneLocked(resource, namespace, name string) {
	e, ok := s.objects[resource][Key{namespace, name}]
	if !ok {
		return
	}
	refs := MustAccessor(e.obj).GetOwnerReferences()
	var live []metav1.OwnerReference
	for _, r := range refs {
		// Only an owner the store itself deleted is known to be gone; a UID
		// it never held belongs to another server (porchsim-apiserver's
		// revisions are owned by variants in the kube-apiserver) and is
		// not the store's to judge.
		if _, gone := s.deletedUIDs[r.UID]; !gone {
			live = append(live, r)
		}
	}
	if len(live) == len(refs) {
		return
	}
	if len(live) > 0 {
		obj := e.obj.DeepCopyObject()
		MustAccessor(obj).SetOwnerReferences(live)
		s.ReplaceLocked(resource, e, obj)
		return
	}
	s.collectLocked(resource, e)
}

// collectLocked deletes a dependent whose owners are gone, unless the
// server refuses to delete it (Rules.Keep): then it keeps its dangling
// owner references.
func (s *Store) collectLocked(resource string, e *Entry) {
	if s.rules.Keep != nil && s.rules.Keep(e.obj) {
		return
	}
	s.DeleteEntryLocked(resource, e, false)
}

func (s *Store) anyOwnerExistsLocked(refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if _, ok := s.uids[r.UID]; ok {
			return true
		}
	}
	return false
}

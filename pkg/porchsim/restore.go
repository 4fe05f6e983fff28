package porchsim

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

// Restore stores a Repository (*configv1alpha1.Repository), PackageVariant
// (*configv1alpha1.PackageVariant) or PackageVariantSet
// (*configv1alpha2.PackageVariantSet) exactly as a cluster holds it, so that
// a fleet read from a cluster is replayed with its identities: a create
// through the API would give it a new uid and generation 1 and drop its
// status and deletionTimestamp, and then, for example, the variants a set
// owns (owner reference to the set's uid, label
// config.porch.kpt.dev/packagevariantset: <set uid>) would look foreign to
// it. PackageRevisions are restored with Import.
//
// Kept as given: uid, generation, labels, annotations, owner references,
// finalizers, deletionTimestamp (and its grace period), spec and status,
// and creationTimestamp when set. The Sim assigns the resourceVersion (its
// own sequence, as for every object it stores), a creationTimestamp when
// there is none, a uid when there is none (as for a create), and generation
// 1 for generation 0. managedFields are dropped: the Sim serves none.
//
// Restore refuses: another type; a missing or invalid namespace or name; an
// object of that kind, namespace and name that exists already (the error
// satisfies apierrors.IsAlreadyExists); a uid that an object of the Sim has
// or had (Kubernetes never reuses one); a deletionTimestamp without
// finalizers (the API server would have removed such an object already).
//
// Order and garbage collection: Restore never collects garbage, so objects
// may be restored in any order. A dependent restored before its owner keeps
// its owner references, and the owner index (keyed by uid) links it to the
// owner whenever the owner is restored. Collection happens only on later
// changes, as for any object: deleting the owner collects its dependents;
// a write of a dependent whose owners the Sim has all deleted collects it;
// an owner reference to a uid the Sim never held is left alone (the owner
// may live elsewhere, or not be restored yet). An object restored being
// deleted (deletionTimestamp and finalizers) goes when an update removes
// its last finalizer, and its dependents are then collected (background
// propagation: an "orphan" finalizer is kept as a finalizer, but the Sim
// has no garbage collector to act on it).
//
// Like the other helpers, Restore is not counted as a request and no fault
// applies to it; it emits ADDED as any create does. It returns a copy of
// the stored object.
func (s *Sim) Restore(obj runtime.Object) (runtime.Object, error) {
	p := s.porch
	var k *store.Kind
	nilObj := false
	switch o := obj.(type) {
	case *configv1alpha1.Repository:
		k, nilObj = repositoryKind, o == nil
	case *configv1alpha1.PackageVariant:
		k, nilObj = packageVariantKind, o == nil
	case *configv1alpha2.PackageVariantSet:
		k, nilObj = packageVariantSetKind, o == nil
	case *porchv1alpha1.PackageRevision:
		return nil, fmt.Errorf("restore: a PackageRevision is restored with Import, which checks Porch's rules and takes its files")
	default:
		return nil, fmt.Errorf("restore: %T is not restorable: Restore takes *v1alpha1.Repository, *v1alpha1.PackageVariant and *v1alpha2.PackageVariantSet of config.porch.kpt.dev", obj)
	}
	if nilObj {
		return nil, fmt.Errorf("restore: no %s given", k.GK.Kind)
	}
	in := obj.DeepCopyObject()
	m := store.MustAccessor(in)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("restore %s %s/%s: %w", k.GK.Kind, m.GetNamespace(), m.GetName(), fmt.Errorf(format, args...))
	}
	var problems []string
	check := func(field, value string, validate func(string) []string) {
		if value == "" {
			problems = append(problems, field+" is required")
			return
		}
		for _, msg := range validate(value) {
			problems = append(problems, field+": "+msg)
		}
	}
	check("metadata.namespace", m.GetNamespace(), validation.IsDNS1123Label)
	check("metadata.name", m.GetName(), validation.IsDNS1123Subdomain)
	if m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 {
		problems = append(problems, "metadata.deletionTimestamp is set but there are no finalizers: "+
			"the API server removes an object being deleted once it has no finalizers")
	}
	if len(problems) > 0 {
		return nil, fail("%s", strings.Join(problems, "; "))
	}

	p.Lock()
	defer p.Unlock()
	if _, ok := p.EntryLocked(k.Resource, m.GetNamespace(), m.GetName()); ok {
		return nil, fail("%w", apierrors.NewAlreadyExists(k.GR, m.GetName()))
	}
	switch uid := m.GetUID(); {
	case uid == "":
		m.SetUID(p.NewUIDLocked(k.Resource, m.GetNamespace(), m.GetName()))
	default:
		if held, ok := p.HolderLocked(uid); ok {
			return nil, fail("metadata.uid %q is already the uid of %s %s/%s", uid, held.Resource, held.Namespace, held.Name)
		}
		if p.RemovedLocked(uid) {
			// Dependents naming it would be taken for orphans of the
			// deleted object (CollectIfOwnersGoneLocked).
			return nil, fail("metadata.uid %q was the uid of an object the Sim deleted; uids are never reused", uid)
		}
	}
	if m.GetGeneration() == 0 {
		m.SetGeneration(1)
	}
	if ts := m.GetCreationTimestamp(); ts.IsZero() {
		m.SetCreationTimestamp(store.Now())
	}
	store.ClearTypeMeta(in)
	m.SetResourceVersion("")
	m.SetManagedFields(nil)
	e := p.StoreNewLocked(k.Resource, in, nil)
	return e.Object().DeepCopyObject(), nil
}

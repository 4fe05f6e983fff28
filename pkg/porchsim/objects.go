package porchsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// Resources served by the Sim.
const (
	resPackageRevisions         = "packagerevisions"
	resPackageRevisionResources = "packagerevisionresources"
	resPackageVariants          = "packagevariants"
	resPackageVariantSets       = "packagevariantsets"
	resRepositories             = "repositories"
)

// optimisticLockMsg is the API server's (and Porch's) conflict message.
const optimisticLockMsg = "the object has been modified; please apply your changes to the latest version and try again"

// kind describes one stored resource.
type kind struct {
	resource string
	gr       schema.GroupResource
	gk       schema.GroupKind
	newObj   func() runtime.Object
	newList  func(items []runtime.Object, rv string) runtime.Object
	// spec returns the part of an object whose change bumps generation.
	spec func(runtime.Object) any
	// copyStatus sets dst's status to (a copy of) src's.
	copyStatus func(dst, src runtime.Object)
	// fields are the object's values for field selectors.
	fields func(runtime.Object) fields.Set
}

var (
	packageRevisionKind = &kind{
		resource: resPackageRevisions,
		gr:       porchv1alpha1.Resource(resPackageRevisions),
		gk:       porchv1alpha1.SchemeGroupVersion.WithKind("PackageRevision").GroupKind(),
		newObj:   func() runtime.Object { return &porchv1alpha1.PackageRevision{} },
		newList: func(items []runtime.Object, rv string) runtime.Object {
			l := &porchv1alpha1.PackageRevisionList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
			for _, it := range items {
				l.Items = append(l.Items, *it.(*porchv1alpha1.PackageRevision))
			}
			return l
		},
		spec: func(o runtime.Object) any { return &o.(*porchv1alpha1.PackageRevision).Spec },
		copyStatus: func(dst, src runtime.Object) {
			dst.(*porchv1alpha1.PackageRevision).Status = *src.(*porchv1alpha1.PackageRevision).Status.DeepCopy()
		},
		fields: func(o runtime.Object) fields.Set {
			pr := o.(*porchv1alpha1.PackageRevision)
			return packageRevisionFields(&pr.ObjectMeta, pr.Spec.RepositoryName, pr.Spec.PackageName,
				string(pr.Spec.WorkspaceName), pr.Spec.Revision, pr.Spec.Lifecycle)
		},
	}
	packageVariantKind = &kind{
		resource: resPackageVariants,
		gr:       configv1alpha1.Resource(resPackageVariants),
		gk:       configv1alpha1.SchemeGroupVersion.WithKind("PackageVariant").GroupKind(),
		newObj:   func() runtime.Object { return &configv1alpha1.PackageVariant{} },
		newList: func(items []runtime.Object, rv string) runtime.Object {
			l := &configv1alpha1.PackageVariantList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
			for _, it := range items {
				l.Items = append(l.Items, *it.(*configv1alpha1.PackageVariant))
			}
			return l
		},
		spec: func(o runtime.Object) any { return &o.(*configv1alpha1.PackageVariant).Spec },
		copyStatus: func(dst, src runtime.Object) {
			dst.(*configv1alpha1.PackageVariant).Status = *src.(*configv1alpha1.PackageVariant).Status.DeepCopy()
		},
		fields: metadataFields,
	}
	packageVariantSetKind = &kind{
		resource: resPackageVariantSets,
		gr:       configv1alpha2.Resource(resPackageVariantSets),
		gk:       configv1alpha2.SchemeGroupVersion.WithKind("PackageVariantSet").GroupKind(),
		newObj:   func() runtime.Object { return &configv1alpha2.PackageVariantSet{} },
		newList: func(items []runtime.Object, rv string) runtime.Object {
			l := &configv1alpha2.PackageVariantSetList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
			for _, it := range items {
				l.Items = append(l.Items, *it.(*configv1alpha2.PackageVariantSet))
			}
			return l
		},
		spec: func(o runtime.Object) any { return &o.(*configv1alpha2.PackageVariantSet).Spec },
		copyStatus: func(dst, src runtime.Object) {
			dst.(*configv1alpha2.PackageVariantSet).Status = *src.(*configv1alpha2.PackageVariantSet).Status.DeepCopy()
		},
		fields: metadataFields,
	}
	repositoryKind = &kind{
		resource: resRepositories,
		gr:       configv1alpha1.Resource(resRepositories),
		gk:       configv1alpha1.SchemeGroupVersion.WithKind("Repository").GroupKind(),
		newObj:   func() runtime.Object { return &configv1alpha1.Repository{} },
		newList: func(items []runtime.Object, rv string) runtime.Object {
			l := &configv1alpha1.RepositoryList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
			for _, it := range items {
				l.Items = append(l.Items, *it.(*configv1alpha1.Repository))
			}
			return l
		},
		spec: func(o runtime.Object) any { return &o.(*configv1alpha1.Repository).Spec },
		copyStatus: func(dst, src runtime.Object) {
			dst.(*configv1alpha1.Repository).Status = *src.(*configv1alpha1.Repository).Status.DeepCopy()
		},
		fields: metadataFields,
	}

	// kinds are the stored resources, in the order garbage collection
	// visits them.
	kinds = []*kind{packageVariantSetKind, packageVariantKind, packageRevisionKind, repositoryKind}

	kindsByResource = map[string]*kind{
		resPackageRevisions:   packageRevisionKind,
		resPackageVariants:    packageVariantKind,
		resPackageVariantSets: packageVariantSetKind,
		resRepositories:       repositoryKind,
	}
)

// packageRevisionFieldLabels are the field selectors Porch supports on
// PackageRevisions (and PackageRevisionResources).
var packageRevisionFieldLabels = []string{
	"metadata.name", "metadata.namespace", "spec.revision", "spec.packageName",
	"spec.repository", "spec.workspaceName", "spec.lifecycle",
}

// metadataFieldLabels are the field selectors every custom resource supports.
var metadataFieldLabels = []string{"metadata.name", "metadata.namespace"}

func packageRevisionFields(m *metav1.ObjectMeta, repo, pkg, workspace string, revision int,
	lifecycle porchv1alpha1.PackageRevisionLifecycle) fields.Set {
	return fields.Set{
		"metadata.name":      m.Name,
		"metadata.namespace": m.Namespace,
		"spec.revision":      strconv.Itoa(revision),
		"spec.packageName":   pkg,
		"spec.repository":    repo,
		"spec.workspaceName": workspace,
		"spec.lifecycle":     string(lifecycle),
	}
}

func metadataFields(o runtime.Object) fields.Set {
	m := mustAccessor(o)
	return fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
}

// checkFieldSelector rejects selectors on fields the server does not index,
// as the API server does.
func checkFieldSelector(sel fields.Selector, supported []string) error {
	if sel == nil {
		return nil
	}
	for _, r := range sel.Requirements() {
		if !slices.Contains(supported, r.Field) {
			return apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s (supported: %s)",
				r.Field, strings.Join(supported, ", ")))
		}
	}
	return nil
}

func selects(lsel labels.Selector, fsel fields.Selector, lbls map[string]string, fset fields.Set) bool {
	if lsel != nil && !lsel.Matches(labels.Set(lbls)) {
		return false
	}
	if fsel != nil && !fsel.Matches(fset) {
		return false
	}
	return true
}

// notServed is the answer to a verb or subresource the Sim does not serve.
func notServed(action clienttesting.Action) error {
	gr := action.GetResource().GroupResource()
	verb := action.GetVerb()
	if sub := action.GetSubresource(); sub != "" {
		verb += " " + sub
	}
	return apierrors.NewMethodNotSupported(gr, verb)
}

// serveObjectLocked serves a config.porch.kpt.dev resource.
func (s *Sim) serveObjectLocked(k *kind, action clienttesting.Action, ns, sub, verb string) (runtime.Object, error) {
	if sub != "" && sub != "status" {
		return nil, notServed(action)
	}
	// Dispatch on the verb: the action interfaces overlap (a delete is
	// also a GetAction, an update also a CreateAction).
	switch verb {
	case "get":
		e, err := s.lookupLocked(k, ns, action.(clienttesting.GetAction).GetName())
		if err != nil {
			return nil, err
		}
		return e.obj.DeepCopyObject(), nil
	case "list":
		r := action.(clienttesting.ListAction).GetListRestrictions()
		items, err := s.listLocked(k, ns, r.Labels, r.Fields, metadataFieldLabels)
		if err != nil {
			return nil, err
		}
		return k.newList(items, strconv.FormatInt(s.rv, 10)), nil
	case "create":
		if sub != "" {
			return nil, notServed(action)
		}
		return s.createObjectLocked(k, ns, action.(clienttesting.CreateAction).GetObject())
	case "update":
		return s.updateObjectLocked(k, ns, action.(clienttesting.UpdateAction).GetObject(), sub == "status")
	case "patch":
		a := action.(clienttesting.PatchAction)
		e, err := s.lookupLocked(k, ns, a.GetName())
		if err != nil {
			return nil, err
		}
		patched, err := applyPatch(k, e.obj, a.GetPatchType(), a.GetPatch())
		if err != nil {
			return nil, err
		}
		return s.updateObjectLocked(k, ns, patched, sub == "status")
	case "delete":
		if sub != "" {
			return nil, notServed(action)
		}
		return nil, s.deleteObjectLocked(k, ns, action.(clienttesting.DeleteAction).GetName(), deleteOptions(action))
	case "delete-collection":
		r := action.(clienttesting.DeleteCollectionAction).GetListRestrictions()
		items, err := s.listLocked(k, ns, r.Labels, r.Fields, metadataFieldLabels)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, it := range items {
			m := mustAccessor(it)
			errs = append(errs, s.deleteObjectLocked(k, m.GetNamespace(), m.GetName(), metav1.DeleteOptions{}))
		}
		return nil, errors.Join(errs...)
	}
	return nil, notServed(action)
}

func deleteOptions(action clienttesting.Action) metav1.DeleteOptions {
	if a, ok := action.(clienttesting.DeleteActionImpl); ok {
		return a.DeleteOptions
	}
	return metav1.DeleteOptions{}
}

func (s *Sim) lookupLocked(k *kind, ns, name string) (*entry, error) {
	e, ok := s.objects[k.resource][objectKey{ns, name}]
	if !ok {
		return nil, apierrors.NewNotFound(k.gr, name)
	}
	return e, nil
}

// listLocked returns copies of the selected objects in namespace/name order.
func (s *Sim) listLocked(k *kind, ns string, lsel labels.Selector, fsel fields.Selector, supported []string) ([]runtime.Object, error) {
	if err := checkFieldSelector(fsel, supported); err != nil {
		return nil, err
	}
	var items []runtime.Object
	for _, key := range s.sortedKeysLocked(k.resource, ns) {
		obj := s.objects[k.resource][key].obj
		if selects(lsel, fsel, mustAccessor(obj).GetLabels(), k.fields(obj)) {
			items = append(items, obj.DeepCopyObject())
		}
	}
	return items, nil
}

// createObjectLocked creates a custom resource as the API server does: the
// server sets uid, timestamps, generation and resourceVersion, and drops the
// status (the status subresource is the only way to write it).
func (s *Sim) createObjectLocked(k *kind, ns string, in runtime.Object) (runtime.Object, error) {
	obj := in.DeepCopyObject()
	m := mustAccessor(obj)
	switch {
	case m.GetNamespace() == "":
		m.SetNamespace(ns)
	case ns != "" && m.GetNamespace() != ns:
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + rand.String(5))
	}
	var errs field.ErrorList
	if m.GetName() == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(m.GetName()) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), m.GetName(), msg))
		}
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(k.gk, m.GetName(), errs)
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if _, ok := s.objects[k.resource][objectKey{m.GetNamespace(), m.GetName()}]; ok {
		return nil, apierrors.NewAlreadyExists(k.gr, m.GetName())
	}
	clearTypeMeta(obj)
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetManagedFields(nil)
	k.copyStatus(obj, k.newObj())
	s.insertLocked(k.resource, obj, nil)
	return obj.DeepCopyObject(), nil
}

// updateObjectLocked updates a custom resource. A plain update ignores
// status; a status update changes nothing but status. An update that removes
// the last finalizer of an object being deleted removes the object.
func (s *Sim) updateObjectLocked(k *kind, ns string, in runtime.Object, status bool) (runtime.Object, error) {
	inMeta := mustAccessor(in)
	if ns == "" {
		ns = inMeta.GetNamespace()
	}
	e, err := s.lookupLocked(k, ns, inMeta.GetName())
	if err != nil {
		return nil, err
	}
	cur := e.obj
	curMeta := mustAccessor(cur)
	if err := checkResourceVersion(k, inMeta, curMeta); err != nil {
		return nil, err
	}

	var obj runtime.Object
	if status {
		obj = cur.DeepCopyObject()
		k.copyStatus(obj, in)
	} else {
		obj = in.DeepCopyObject()
		k.copyStatus(obj, cur)
		m := mustAccessor(obj)
		keepServerMetadata(m, curMeta)
		if curMeta.GetDeletionTimestamp() != nil {
			for _, f := range m.GetFinalizers() {
				if !slices.Contains(curMeta.GetFinalizers(), f) {
					return nil, apierrors.NewInvalid(k.gk, curMeta.GetName(), field.ErrorList{
						field.Forbidden(field.NewPath("metadata", "finalizers"), "no new finalizers can be added if the object is being deleted"),
					})
				}
			}
		}
		if !equality.Semantic.DeepEqual(k.spec(obj), k.spec(cur)) {
			m.SetGeneration(curMeta.GetGeneration() + 1)
		}
	}
	clearTypeMeta(obj)
	return s.storeUpdateLocked(k.resource, e, obj), nil
}

// storeUpdateLocked stores an updated object unless nothing changed (then,
// as with etcd, neither the resourceVersion moves nor an event is sent), and
// removes an object being deleted once its last finalizer is gone.
func (s *Sim) storeUpdateLocked(resource string, e *entry, obj runtime.Object) runtime.Object {
	m := mustAccessor(obj)
	m.SetResourceVersion(mustAccessor(e.obj).GetResourceVersion())
	if m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 {
		s.removeLocked(resource, e, obj)
		return obj.DeepCopyObject()
	}
	if equality.Semantic.DeepEqual(obj, e.obj) {
		return e.obj.DeepCopyObject()
	}
	s.replaceLocked(resource, e, obj)
	return obj.DeepCopyObject()
}

// keepServerMetadata restores the metadata a client cannot change.
func keepServerMetadata(m, cur metav1.Object) {
	m.SetName(cur.GetName())
	m.SetNamespace(cur.GetNamespace())
	m.SetUID(cur.GetUID())
	m.SetCreationTimestamp(cur.GetCreationTimestamp())
	m.SetDeletionTimestamp(cur.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(cur.GetDeletionGracePeriodSeconds())
	m.SetGeneration(cur.GetGeneration())
	m.SetManagedFields(nil)
}

func checkResourceVersion(k *kind, in, cur metav1.Object) error {
	switch in.GetResourceVersion() {
	case "":
		return apierrors.NewInvalid(k.gk, cur.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), "", "must be specified for an update"),
		})
	case cur.GetResourceVersion():
		return nil
	}
	return apierrors.NewConflict(k.gr, cur.GetName(), errors.New(optimisticLockMsg))
}

// deleteObjectLocked deletes a custom resource after checking the delete
// preconditions.
func (s *Sim) deleteObjectLocked(k *kind, ns, name string, opts metav1.DeleteOptions) error {
	e, err := s.lookupLocked(k, ns, name)
	if err != nil {
		return err
	}
	if err := checkPreconditions(k, e.obj, opts.Preconditions); err != nil {
		return err
	}
	s.deleteEntryLocked(k.resource, e, orphans(opts))
	return nil
}

func orphans(opts metav1.DeleteOptions) bool {
	return opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationOrphan
}

func checkPreconditions(k *kind, obj runtime.Object, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	m := mustAccessor(obj)
	if p.UID != nil && *p.UID != m.GetUID() {
		return apierrors.NewConflict(k.gr, m.GetName(), fmt.Errorf(
			"precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(k.gr, m.GetName(), fmt.Errorf(
			"precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v",
			*p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// deleteEntryLocked deletes a stored object: one with finalizers only gets
// its deletionTimestamp (and a generation bump, as the API server does); the
// others go at once.
func (s *Sim) deleteEntryLocked(resource string, e *entry, orphan bool) {
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
func (s *Sim) collectGarbageLocked(namespace string, owner types.UID, orphan bool) {
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
		if pr, ok := e.obj.(*porchv1alpha1.PackageRevision); ok && s.deleteRefusalLocked(pr) != nil {
			continue
		}
		s.deleteEntryLocked(ref.resource, e, false)
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
func (s *Sim) collectIfOwnersGoneLocked(resource, namespace, name string) {
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
	if pr, ok := e.obj.(*porchv1alpha1.PackageRevision); ok && s.deleteRefusalLocked(pr) != nil {
		return
	}
	s.deleteEntryLocked(resource, e, false)
}

func (s *Sim) anyOwnerExistsLocked(refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if _, ok := s.uids[r.UID]; ok {
			return true
		}
	}
	return false
}

// applyPatch applies a JSON, merge or strategic merge patch to a copy of
// cur. Server-side apply is not supported.
func applyPatch(k *kind, cur runtime.Object, pt types.PatchType, patch []byte) (runtime.Object, error) {
	orig, err := json.Marshal(cur)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var patched []byte
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		patched, err = p.Apply(orig)
		if err != nil {
			return nil, apierrors.NewInvalid(k.gk, mustAccessor(cur).GetName(), field.ErrorList{
				field.Invalid(field.NewPath(""), string(patch), err.Error()),
			})
		}
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(orig, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	case types.StrategicMergePatchType:
		patched, err = strategicpatch.StrategicMergePatch(orig, patch, k.newObj())
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patch type %q is not supported by porchsim", pt))
	}
	obj := k.newObj()
	if err := json.Unmarshal(patched, obj); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patched object is invalid: %v", err))
	}
	return obj, nil
}

func clearTypeMeta(obj runtime.Object) {
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
}

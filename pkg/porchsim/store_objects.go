package porchsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

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

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
)

// kindWriter writes the objects of one kind: the store's API-server
// semantics (objectWriter), or a server's own rules (porch, for
// PackageRevisions). sub is the subresource of an update ("" or one the
// writer serves).
type kindWriter interface {
	createLocked(ns string, obj runtime.Object) (runtime.Object, error)
	updateLocked(ns string, obj runtime.Object, sub string) (runtime.Object, error)
	deleteLocked(ns, name string, opts metav1.DeleteOptions) error
}

// serveObjectLocked serves a custom resource of the config.porch.kpt.dev
// group; status is its only subresource.
func (s *store) serveObjectLocked(k *kind, action clienttesting.Action, ns, sub, verb string) (runtime.Object, error) {
	if sub != "" && sub != "status" {
		return nil, notServed(action)
	}
	return s.serveKindLocked(k, objectWriter{s, k}, action, ns, sub, verb)
}

// serveKindLocked serves a request for a kind the store holds: reads from
// the store, writes through w. Only updates and patches go to a
// subresource.
func (s *store) serveKindLocked(k *kind, w kindWriter, action clienttesting.Action, ns, sub, verb string) (runtime.Object, error) {
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
		items, err := s.listLocked(k, ns, r.Labels, r.Fields)
		if err != nil {
			return nil, err
		}
		rv := ""
		if k.listVersions {
			rv = strconv.FormatInt(s.rv, 10)
		}
		return k.newList(items, rv), nil
	case "create":
		if sub != "" {
			return nil, notServed(action)
		}
		return w.createLocked(ns, action.(clienttesting.CreateAction).GetObject())
	case "update":
		return w.updateLocked(ns, action.(clienttesting.UpdateAction).GetObject(), sub)
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
		return w.updateLocked(ns, patched, sub)
	case "delete":
		if sub != "" {
			return nil, notServed(action)
		}
		return nil, w.deleteLocked(ns, action.(clienttesting.DeleteAction).GetName(), deleteOptions(action))
	case "delete-collection":
		r := action.(clienttesting.DeleteCollectionAction).GetListRestrictions()
		items, err := s.listLocked(k, ns, r.Labels, r.Fields)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, it := range items {
			m := mustAccessor(it)
			errs = append(errs, w.deleteLocked(m.GetNamespace(), m.GetName(), metav1.DeleteOptions{}))
		}
		return nil, errors.Join(errs...)
	}
	return nil, notServed(action)
}

// objectWriter writes custom resources as the API server does.
type objectWriter struct {
	s *store
	k *kind
}

func (w objectWriter) createLocked(ns string, obj runtime.Object) (runtime.Object, error) {
	return w.s.createObjectLocked(w.k, ns, obj)
}

func (w objectWriter) updateLocked(ns string, obj runtime.Object, sub string) (runtime.Object, error) {
	return w.s.updateObjectLocked(w.k, ns, obj, sub == "status")
}

func (w objectWriter) deleteLocked(ns, name string, opts metav1.DeleteOptions) error {
	return w.s.deleteObjectLocked(w.k, ns, name, opts)
}

func deleteOptions(action clienttesting.Action) metav1.DeleteOptions {
	if a, ok := action.(clienttesting.DeleteActionImpl); ok {
		return a.DeleteOptions
	}
	return metav1.DeleteOptions{}
}

func (s *store) lookupLocked(k *kind, ns, name string) (*entry, error) {
	e, ok := s.objects[k.resource][objectKey{ns, name}]
	if !ok {
		return nil, apierrors.NewNotFound(k.gr, name)
	}
	return e, nil
}

// listLocked returns copies of the selected objects in namespace/name order.
func (s *store) listLocked(k *kind, ns string, lsel labels.Selector, fsel fields.Selector) ([]runtime.Object, error) {
	if err := checkFieldSelector(fsel, k.fieldLabels); err != nil {
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
func (s *store) createObjectLocked(k *kind, ns string, in runtime.Object) (runtime.Object, error) {
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
func (s *store) updateObjectLocked(k *kind, ns string, in runtime.Object, status bool) (runtime.Object, error) {
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
func (s *store) storeUpdateLocked(resource string, e *entry, obj runtime.Object) runtime.Object {
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
	return apierrors.NewConflict(k.gr, cur.GetName(), errors.New(helper.OptimisticLockMessage))
}

// deleteObjectLocked deletes a custom resource after checking the delete
// preconditions.
func (s *store) deleteObjectLocked(k *kind, ns, name string, opts metav1.DeleteOptions) error {
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

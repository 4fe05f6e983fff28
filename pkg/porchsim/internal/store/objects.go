package store

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

// Writer writes the objects of one kind: the store's API-server
// semantics (objectWriter), or a server's own rules (Porch's, for
// PackageRevisions). sub is the subresource of an update ("" or one the
// writer serves).
type Writer interface {
	CreateLocked(ns string, obj runtime.Object) (runtime.Object, error)
	UpdateLocked(ns string, obj runtime.Object, sub string) (runtime.Object, error)
	DeleteLocked(ns, name string, opts metav1.DeleteOptions) error
}

// ServeObjectLocked serves a custom resource as the API server does;
// status is its only subresource.
func (s *Store) ServeObjectLocked(k *Kind, action clienttesting.Action, ns, sub, verb string) (runtime.Object, error) {
	if sub != "" && sub != "status" {
		return nil, NotServed(action)
	}
	return s.ServeKindLocked(k, objectWriter{s, k}, action, ns, sub, verb)
}

// ServeKindLocked serves a request for a kind the store holds: reads from
// the store, writes through w. Only updates and patches go to a
// subresource.
func (s *Store) ServeKindLocked(k *Kind, w Writer, action clienttesting.Action, ns, sub, verb string) (runtime.Object, error) {
	// Dispatch on the verb: the action interfaces overlap (a delete is
	// also a GetAction, an update also a CreateAction).
	switch verb {
	case "get":
		e, err := s.LookupLocked(k, ns, action.(clienttesting.GetAction).GetName())
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
		if k.ListVersions {
			rv = strconv.FormatInt(s.rv, 10)
		}
		return k.NewList(items, rv), nil
	case "create":
		if sub != "" {
			return nil, NotServed(action)
		}
		return w.CreateLocked(ns, action.(clienttesting.CreateAction).GetObject())
	case "update":
		return w.UpdateLocked(ns, action.(clienttesting.UpdateAction).GetObject(), sub)
	case "patch":
		a := action.(clienttesting.PatchAction)
		e, err := s.LookupLocked(k, ns, a.GetName())
		if err != nil {
			return nil, err
		}
		patched, err := applyPatch(k, e.obj, a.GetPatchType(), a.GetPatch())
		if err != nil {
			return nil, err
		}
		return w.UpdateLocked(ns, patched, sub)
	case "delete":
		if sub != "" {
			return nil, NotServed(action)
		}
		return nil, w.DeleteLocked(ns, action.(clienttesting.DeleteAction).GetName(), deleteOptions(action))
	case "delete-collection":
		r := action.(clienttesting.DeleteCollectionAction).GetListRestrictions()
		items, err := s.listLocked(k, ns, r.Labels, r.Fields)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, it := range items {
			m := MustAccessor(it)
			errs = append(errs, w.DeleteLocked(m.GetNamespace(), m.GetName(), metav1.DeleteOptions{}))
		}
		return nil, errors.Join(errs...)
	}
	return nil, NotServed(action)
}

// objectWriter writes custom resources as the API server does.
type objectWriter struct {
	s *Store
	k *Kind
}

func (w objectWriter) CreateLocked(ns string, obj runtime.Object) (runtime.Object, error) {
	return w.s.createObjectLocked(w.k, ns, obj)
}

func (w objectWriter) UpdateLocked(ns string, obj runtime.Object, sub string) (runtime.Object, error) {
	return w.s.updateObjectLocked(w.k, ns, obj, sub == "status")
}

func (w objectWriter) DeleteLocked(ns, name string, opts metav1.DeleteOptions) error {
	return w.s.deleteObjectLocked(w.k, ns, name, opts)
}

func deleteOptions(action clienttesting.Action) metav1.DeleteOptions {
	if a, ok := action.(clienttesting.DeleteActionImpl); ok {
		return a.DeleteOptions
	}
	return metav1.DeleteOptions{}
}

func (s *Store) LookupLocked(k *Kind, ns, name string) (*Entry, error) {
	e, ok := s.objects[k.Resource][Key{ns, name}]
	if !ok {
		return nil, apierrors.NewNotFound(k.GR, name)
	}
	return e, nil
}

// listLocked returns copies of the selected objects in namespace/name order.
func (s *Store) listLocked(k *Kind, ns string, lsel labels.Selector, fsel fields.Selector) ([]runtime.Object, error) {
	if err := CheckFieldSelector(fsel, k.FieldLabels); err != nil {
		return nil, err
	}
	var items []runtime.Object
	for _, key := range s.SortedKeysLocked(k.Resource, ns) {
		obj := s.objects[k.Resource][key].obj
		if Selects(lsel, fsel, MustAccessor(obj).GetLabels(), k.Fields(obj)) {
			items = append(items, obj.DeepCopyObject())
		}
	}
	return items, nil
}

// createObjectLocked creates a custom resource as the API server does: the
// server sets uid, timestamps, generation and resourceVersion, and drops the
// status (the status subresource is the only way to write it).
func (s *Store) createObjectLocked(k *Kind, ns string, in runtime.Object) (runtime.Object, error) {
	obj := in.DeepCopyObject()
	m := MustAccessor(obj)
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
		return nil, apierrors.NewInvalid(k.GK, m.GetName(), errs)
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if _, ok := s.objects[k.Resource][Key{m.GetNamespace(), m.GetName()}]; ok {
		return nil, apierrors.NewAlreadyExists(k.GR, m.GetName())
	}
	ClearTypeMeta(obj)
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetManagedFields(nil)
	k.CopyStatus(obj, k.NewObj())
	s.InsertLocked(k.Resource, obj, nil)
	return obj.DeepCopyObject(), nil
}

// updateObjectLocked updates a custom resource. A plain update ignores
// status; a status update changes nothing but status. An update that removes
// the last finalizer of an object being deleted removes the object.
func (s *Store) updateObjectLocked(k *Kind, ns string, in runtime.Object, status bool) (runtime.Object, error) {
	inMeta := MustAccessor(in)
	if ns == "" {
		ns = inMeta.GetNamespace()
	}
	e, err := s.LookupLocked(k, ns, inMeta.GetName())
	if err != nil {
		return nil, err
	}
	cur := e.obj
	curMeta := MustAccessor(cur)
	if err := checkResourceVersion(k, inMeta, curMeta); err != nil {
		return nil, err
	}

	var obj runtime.Object
	if status {
		obj = cur.DeepCopyObject()
		k.CopyStatus(obj, in)
	} else {
		obj = in.DeepCopyObject()
		k.CopyStatus(obj, cur)
		m := MustAccessor(obj)
		keepServerMetadata(m, curMeta)
		if curMeta.GetDeletionTimestamp() != nil {
			for _, f := range m.GetFinalizers() {
				if !slices.Contains(curMeta.GetFinalizers(), f) {
					return nil, apierrors.NewInvalid(k.GK, curMeta.GetName(), field.ErrorList{
						field.Forbidden(field.NewPath("metadata", "finalizers"), "no new finalizers can be added if the object is being deleted"),
					})
				}
			}
		}
		if !equality.Semantic.DeepEqual(k.Spec(obj), k.Spec(cur)) {
			m.SetGeneration(curMeta.GetGeneration() + 1)
		}
	}
	ClearTypeMeta(obj)
	return s.StoreUpdateLocked(k.Resource, e, obj), nil
}

// StoreUpdateLocked stores an updated object unless nothing changed (then,
// as with etcd, neither the resourceVersion moves nor an event is sent), and
// removes an object being deleted once its last finalizer is gone.
func (s *Store) StoreUpdateLocked(resource string, e *Entry, obj runtime.Object) runtime.Object {
	m := MustAccessor(obj)
	m.SetResourceVersion(MustAccessor(e.obj).GetResourceVersion())
	if m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 {
		s.removeLocked(resource, e, obj)
		return obj.DeepCopyObject()
	}
	if equality.Semantic.DeepEqual(obj, e.obj) {
		return e.obj.DeepCopyObject()
	}
	s.ReplaceLocked(resource, e, obj)
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

func checkResourceVersion(k *Kind, in, cur metav1.Object) error {
	switch in.GetResourceVersion() {
	case "":
		return apierrors.NewInvalid(k.GK, cur.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), "", "must be specified for an update"),
		})
	case cur.GetResourceVersion():
		return nil
	}
	return apierrors.NewConflict(k.GR, cur.GetName(), errors.New(helper.OptimisticLockMessage))
}

// deleteObjectLocked deletes a custom resource after checking the delete
// preconditions.
func (s *Store) deleteObjectLocked(k *Kind, ns, name string, opts metav1.DeleteOptions) error {
	e, err := s.LookupLocked(k, ns, name)
	if err != nil {
		return err
	}
	if err := checkPreconditions(k, e.obj, opts.Preconditions); err != nil {
		return err
	}
	s.DeleteEntryLocked(k.Resource, e, orphans(opts))
	return nil
}

func checkPreconditions(k *Kind, obj runtime.Object, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	m := MustAccessor(obj)
	if p.UID != nil && *p.UID != m.GetUID() {
		return apierrors.NewConflict(k.GR, m.GetName(), fmt.Errorf(
			"precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(k.GR, m.GetName(), fmt.Errorf(
			"precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v",
			*p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// applyPatch applies a JSON, merge or strategic merge patch to a copy of
// cur. Server-side apply is not supported.
func applyPatch(k *Kind, cur runtime.Object, pt types.PatchType, patch []byte) (runtime.Object, error) {
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
			return nil, apierrors.NewInvalid(k.GK, MustAccessor(cur).GetName(), field.ErrorList{
				field.Invalid(field.NewPath(""), string(patch), err.Error()),
			})
		}
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(orig, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	case types.StrategicMergePatchType:
		patched, err = strategicpatch.StrategicMergePatch(orig, patch, k.NewObj())
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patch type %q is not supported by porchsim", pt))
	}
	obj := k.NewObj()
	if err := json.Unmarshal(patched, obj); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patched object is invalid: %v", err))
	}
	return obj, nil
}

// ClearTypeMeta clears the kind and apiVersion of an object about to be
// stored: the store keeps typed objects without them.
func ClearTypeMeta(obj runtime.Object) {
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
}

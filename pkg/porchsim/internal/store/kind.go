package store

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
)

// Kind describes one stored resource. The server on top of the store
// registers its kinds (New); the store knows no other.
type Kind struct {
	Resource string
	GR       schema.GroupResource
	GK       schema.GroupKind
	NewObj   func() runtime.Object
	NewList  func(items []runtime.Object, rv string) runtime.Object
	// Spec returns the part of an object whose change bumps generation.
	Spec func(runtime.Object) any
	// CopyStatus sets dst's status to (a copy of) src's.
	CopyStatus func(dst, src runtime.Object)
	// Fields are the object's values for field selectors, and
	// FieldLabels the fields a selector may name.
	Fields      func(runtime.Object) fields.Set
	FieldLabels []string
	// ListVersions tells whether a list carries a resourceVersion.
	ListVersions bool
	// OpaqueVersion, when set, makes the resourceVersion of the change
	// with sequence number seq an opaque string a client cannot order or
	// parse (Porch hands out commit SHAs); otherwise it is the number.
	OpaqueVersion func(seq int64) string
	// NoGeneration leaves metadata.generation at 0; UID, when set, derives
	// an object's UID from its namespace and name.
	NoGeneration bool
	UID          func(namespace, name string) types.UID
	// ReplaysWatches starts every watch over with every object ADDED and
	// a BOOKMARK marking the end of them, whatever resourceVersion the
	// client asks to resume from.
	ReplaysWatches bool
	// Group, when set, files objects in a secondary index by the
	// comparable key it returns (nil: in no group); GroupLocked lists a
	// group. A server's per-group rules stay cheap with it.
	Group func(runtime.Object) any
}

// ObjectKind describes a kind whose Go type has Spec and Status fields,
// served as the API server serves custom resources: field selectors on
// the metadata only, lists with a resourceVersion.
func ObjectKind(gv schema.GroupVersion, resource, name string, newObj, newList func() runtime.Object) *Kind {
	return &Kind{
		Resource: resource,
		GR:       gv.WithResource(resource).GroupResource(),
		GK:       gv.WithKind(name).GroupKind(),
		NewObj:   newObj,
		NewList: func(items []runtime.Object, rv string) runtime.Object {
			l := newList()
			if len(items) > 0 {
				if err := meta.SetList(l, items); err != nil {
					panic(fmt.Sprintf("porchsim: list of %s: %v", resource, err))
				}
			}
			l.(metav1.ListInterface).SetResourceVersion(rv)
			return l
		},
		Spec: func(o runtime.Object) any { return structField(o, "Spec").Addr().Interface() },
		CopyStatus: func(dst, src runtime.Object) {
			structField(dst, "Status").Set(structField(src.DeepCopyObject(), "Status"))
		},
		Fields:       metadataFields,
		FieldLabels:  metadataFieldLabels,
		ListVersions: true,
	}
}

// structField is the named field of the struct obj points to.
func structField(obj runtime.Object, name string) reflect.Value {
	return reflect.ValueOf(obj).Elem().FieldByName(name)
}

// metadataFieldLabels are the field selectors every custom resource supports.
var metadataFieldLabels = []string{"metadata.name", "metadata.namespace"}

func metadataFields(o runtime.Object) fields.Set {
	m := MustAccessor(o)
	return fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
}

// CheckFieldSelector rejects selectors on fields the server does not index,
// as the API server does.
func CheckFieldSelector(sel fields.Selector, supported []string) error {
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

// Selects tells whether an object's labels and fields match the selectors
// (nil selects everything).
func Selects(lsel labels.Selector, fsel fields.Selector, lbls map[string]string, fset fields.Set) bool {
	if lsel != nil && !lsel.Matches(labels.Set(lbls)) {
		return false
	}
	if fsel != nil && !fsel.Matches(fset) {
		return false
	}
	return true
}

// NotServed is the answer to a verb or subresource the server does not serve.
func NotServed(action clienttesting.Action) error {
	gr := action.GetResource().GroupResource()
	verb := action.GetVerb()
	if sub := action.GetSubresource(); sub != "" {
		verb += " " + sub
	}
	return apierrors.NewMethodNotSupported(gr, verb)
}

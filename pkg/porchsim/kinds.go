package porchsim

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
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

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
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
	// fields are the object's values for field selectors, and
	// fieldLabels the fields a selector may name.
	fields      func(runtime.Object) fields.Set
	fieldLabels []string
	// listVersions tells whether a list carries a resourceVersion.
	listVersions bool
	// opaqueVersions makes resourceVersions opaque strings a client cannot
	// order or parse; noGeneration leaves metadata.generation at 0; uid,
	// when set, derives an object's UID from its namespace and name. Each
	// is how Porch treats PackageRevisions.
	opaqueVersions bool
	noGeneration   bool
	uid            func(namespace, name string) types.UID
	// replaysWatches starts every watch over with every object ADDED and
	// a BOOKMARK marking the end of them, whatever resourceVersion the
	// client asks to resume from, as Porch's watches do.
	replaysWatches bool
}

// objectKind describes a kind whose Go type has Spec and Status fields,
// served as the API server serves custom resources: field selectors on
// the metadata only, lists with a resourceVersion.
func objectKind(gv schema.GroupVersion, resource, name string, newObj, newList func() runtime.Object) *kind {
	return &kind{
		resource: resource,
		gr:       gv.WithResource(resource).GroupResource(),
		gk:       gv.WithKind(name).GroupKind(),
		newObj:   newObj,
		newList: func(items []runtime.Object, rv string) runtime.Object {
			l := newList()
			if len(items) > 0 {
				if err := meta.SetList(l, items); err != nil {
					panic(fmt.Sprintf("porchsim: list of %s: %v", resource, err))
				}
			}
			l.(metav1.ListInterface).SetResourceVersion(rv)
			return l
		},
		spec: func(o runtime.Object) any { return structField(o, "Spec").Addr().Interface() },
		copyStatus: func(dst, src runtime.Object) {
			structField(dst, "Status").Set(structField(src.DeepCopyObject(), "Status"))
		},
		fields:       metadataFields,
		fieldLabels:  metadataFieldLabels,
		listVersions: true,
	}
}

// structField is the named field of the struct obj points to.
func structField(obj runtime.Object, name string) reflect.Value {
	return reflect.ValueOf(obj).Elem().FieldByName(name)
}

var (
	packageRevisionKind = func() *kind {
		k := objectKind(porchv1alpha1.SchemeGroupVersion, resPackageRevisions, "PackageRevision",
			func() runtime.Object { return &porchv1alpha1.PackageRevision{} },
			func() runtime.Object { return &porchv1alpha1.PackageRevisionList{} })
		k.fields = func(o runtime.Object) fields.Set {
			pr := o.(*porchv1alpha1.PackageRevision)
			return packageRevisionFields(&pr.ObjectMeta, pr.Spec.RepositoryName, pr.Spec.PackageName,
				string(pr.Spec.WorkspaceName), pr.Spec.Revision, pr.Spec.Lifecycle)
		}
		k.fieldLabels = packageRevisionFieldLabels
		// Porch's lists carry no resourceVersion, and its resourceVersions
		// are commit SHAs.
		k.listVersions, k.opaqueVersions = false, true
		// Porch leaves a PackageRevision's generation at 0.
		k.noGeneration = true
		// A revision deleted and made again has the same UID: a UID
		// precondition protects nothing.
		k.uid = helper.PackageRevisionUID
		k.replaysWatches = true
		return k
	}()
	packageVariantKind = objectKind(configv1alpha1.SchemeGroupVersion, resPackageVariants, "PackageVariant",
		func() runtime.Object { return &configv1alpha1.PackageVariant{} },
		func() runtime.Object { return &configv1alpha1.PackageVariantList{} })
	packageVariantSetKind = objectKind(configv1alpha2.SchemeGroupVersion, resPackageVariantSets, "PackageVariantSet",
		func() runtime.Object { return &configv1alpha2.PackageVariantSet{} },
		func() runtime.Object { return &configv1alpha2.PackageVariantSetList{} })
	repositoryKind = objectKind(configv1alpha1.SchemeGroupVersion, resRepositories, "Repository",
		func() runtime.Object { return &configv1alpha1.Repository{} },
		func() runtime.Object { return &configv1alpha1.RepositoryList{} })

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

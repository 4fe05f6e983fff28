package apiserver

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// tableConvertor renders objects as the rows kubectl prints, with the
// columns Porch's server offers.
type tableConvertor struct {
	resource schema.GroupResource
	columns  []metav1.TableColumnDefinition
	// cells returns the row of one object; ok is false for an object of
	// another type.
	cells func(obj runtime.Object) (cells []any, ok bool)
}

var _ rest.TableConvertor = tableConvertor{}

var objectMetaDescriptions = metav1.ObjectMeta{}.SwaggerDoc()

// revisionColumns are the columns both tables start with: what names a
// revision.
func revisionColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: objectMetaDescriptions["name"]},
		{Name: "Package", Type: "string", Description: "The package's path in its repository."},
		{Name: "WorkspaceName", Type: "string", Description: "The revision's workspace, unique among the package's revisions."},
		{Name: "Revision", Type: "integer", Description: "The revision number: 0 until published, -1 for the placeholder that tracks a branch."},
	}
}

// repositoryColumn is the column of a revision's repository.
var repositoryColumn = metav1.TableColumnDefinition{Name: "Repository", Type: "string", Description: "The Repository holding the package."}

// revisionCells are the cells of revisionColumns.
func revisionCells(name, pkg string, ws porchv1alpha1.WorkspaceName, revision int) []any {
	return []any{name, pkg, string(ws), int64(revision)}
}

var packageRevisionTable = tableConvertor{
	resource: porchv1alpha1.Resource("packagerevisions"),
	columns: append(revisionColumns(),
		metav1.TableColumnDefinition{Name: "Latest", Type: "boolean", Description: "Whether this is the latest published revision of the package."},
		metav1.TableColumnDefinition{Name: "Lifecycle", Type: "string", Description: "Draft, Proposed, Published or DeletionProposed."},
		repositoryColumn,
	),
	cells: func(obj runtime.Object) ([]any, bool) {
		pr, ok := obj.(*porchv1alpha1.PackageRevision)
		if !ok {
			return nil, false
		}
		return append(revisionCells(pr.Name, pr.Spec.PackageName, pr.Spec.WorkspaceName, pr.Spec.Revision),
			pr.Labels[porchv1alpha1.LatestPackageRevisionLabel] == "true",
			string(pr.Spec.Lifecycle),
			pr.Spec.RepositoryName,
		), true
	},
}

var packageRevisionResourcesTable = tableConvertor{
	resource: porchv1alpha1.Resource("packagerevisionresources"),
	columns: append(revisionColumns(),
		repositoryColumn,
		metav1.TableColumnDefinition{Name: "Files", Type: "integer", Description: "How many files the package revision holds."},
	),
	cells: func(obj runtime.Object) ([]any, bool) {
		prr, ok := obj.(*porchv1alpha1.PackageRevisionResources)
		if !ok {
			return nil, false
		}
		return append(revisionCells(prr.Name, prr.Spec.PackageName, prr.Spec.WorkspaceName, prr.Spec.Revision),
			prr.Spec.RepositoryName,
			int64(len(prr.Spec.Resources)),
		), true
	},
}

// ConvertToTable renders one object or a list.
func (c tableConvertor) ConvertToTable(_ context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	row := func(obj runtime.Object) error {
		cells, ok := c.cells(obj)
		if !ok {
			return notAcceptable(c.resource, obj)
		}
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: obj}})
		return nil
	}
	if meta.IsListType(object) {
		if err := meta.EachListItem(object, row); err != nil {
			return nil, err
		}
	} else if err := row(object); err != nil {
		return nil, err
	}
	if m, err := meta.ListAccessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = c.columns
	}
	return table, nil
}

// notAcceptable is the answer for an object a table has no columns for.
func notAcceptable(gr schema.GroupResource, obj runtime.Object) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: fmt.Sprintf("cannot render %T as a table of %s", obj, gr),
	}}
}

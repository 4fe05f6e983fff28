package packagevariantset

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/ondemand"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// target is one downstream a set asks for, before its template is rendered.
type target struct {
	// index is the position in spec.targets, for field paths in messages.
	index          int
	template       *configv1alpha2.PackageVariantTemplate
	repoDefault    string
	packageDefault string
	// object is the selected Repository or object; nil for a target from
	// the repositories list (target is then {repo, package}).
	object *celtemplate.Object
	// version is the resourceVersion of object ("" without one).
	version string
}

// targetError is a target that cannot be expanded until the spec or the
// cluster changes (a kind that is not served, a bad selector); other
// expansion errors are transient and retried.
type targetError struct{ msg string }

func (e *targetError) Error() string { return e.msg }

// expandTargets lists the downstreams of every target, from the informer
// caches. An error is never an empty result: the caller must not delete
// anything when it gets one.
func (c *Controller) expandTargets(ctx context.Context, pvs *configv1alpha2.PackageVariantSet) ([]target, error) {
	var out []target
	upstreamPackage := pvs.Spec.Upstream.Package
	packageNames := func(names []string) []string {
		if len(names) == 0 {
			return []string{upstreamPackage}
		}
		return names
	}
	for i := range pvs.Spec.Targets {
		t := &pvs.Spec.Targets[i]
		switch {
		case t.Repositories != nil:
			for _, r := range t.Repositories {
				for _, pn := range packageNames(r.PackageNames) {
					out = append(out, target{index: i, template: t.Template, repoDefault: r.Name, packageDefault: pn})
				}
			}
		case t.RepositorySelector != nil:
			path := confighelper.TargetPath(i).Child("repositorySelector")
			sel, err := metav1.LabelSelectorAsSelector(&t.RepositorySelector.LabelSelector)
			if err != nil {
				return nil, &targetError{fmt.Sprintf("%s: %v", path, err)}
			}
			repos, err := c.repoLister.Repositories(pvs.Namespace).List(sel)
			if err != nil {
				return nil, fmt.Errorf("%s: list Repositories: %w", path, err)
			}
			sortRepositories(repos)
			for _, r := range repos {
				obj := objectOf(r.Name, r.Namespace, r.Labels, r.Annotations)
				for _, pn := range packageNames(t.RepositorySelector.PackageNames) {
					out = append(out, target{index: i, template: t.Template, repoDefault: r.Name, packageDefault: pn, object: obj, version: r.ResourceVersion})
				}
			}
		case t.ObjectSelector != nil:
			objs, err := c.selectObjects(ctx, pvs.Namespace, i, t)
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				for _, pn := range packageNames(t.ObjectSelector.PackageNames) {
					out = append(out, target{index: i, template: t.Template, repoDefault: o.object.Name, packageDefault: pn, object: o.object, version: o.version})
				}
			}
		}
	}
	return out, nil
}

// selectObjects serves the objectSelector of target t (spec.targets[i])
// from the on-demand informer of its kind (Repositories from their own
// informer). Each selected object other than a Repository is used only if
// the target's ServiceAccount may get it; one it may not stops the whole
// set, as any error does: nothing is created or deleted for a selection
// that cannot be read in full.
func (c *Controller) selectObjects(ctx context.Context, namespace string, i int, t *configv1alpha2.Target) ([]selected, error) {
	s := t.ObjectSelector
	path := confighelper.TargetPath(i).Child("objectSelector")
	sel, err := metav1.LabelSelectorAsSelector(&s.LabelSelector)
	if err != nil {
		return nil, &targetError{fmt.Sprintf("%s: %v", path, err)}
	}
	gv, err := schema.ParseGroupVersion(s.APIVersion)
	if err != nil {
		return nil, &targetError{fmt.Sprintf("%s %q: %v", path.Child("apiVersion"), s.APIVersion, err)}
	}
	gvk := gv.WithKind(s.Kind)
	var out []selected
	keep := func(name string) bool { return s.Name == nil || *s.Name == name }
	if gvk.GroupKind() == configv1alpha1.SchemeGroupVersion.WithKind("Repository").GroupKind() {
		repos, err := c.repoLister.Repositories(namespace).List(sel)
		if err != nil {
			return nil, fmt.Errorf("%s: list Repositories: %w", path, err)
		}
		sortRepositories(repos)
		for _, r := range repos {
			if keep(r.Name) {
				out = append(out, selected{objectOf(r.Name, r.Namespace, r.Labels, r.Annotations), r.ResourceVersion})
			}
		}
		return out, nil
	}
	items, err := c.objects.List(gvk, namespace, sel)
	var unusable *ondemand.UnusableKindError
	if errors.As(err, &unusable) {
		return nil, &targetError{fmt.Sprintf("%s: %v", path, err)}
	}
	var denied *ondemand.AccessError
	if errors.As(err, &denied) {
		// Reported on the set (Ready=False, with what to grant) and tried
		// again as long as it takes, when the refusal expires: a grant then
		// takes effect even if the kind has no objects to send events.
		return nil, workloop.RetryAfter(denied.RetryAfter, fmt.Errorf("%s: %w", path, err))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	account := ""
	if t.Template != nil && t.Template.ServiceAccountName != nil {
		account = *t.Template.ServiceAccountName
	}
	for _, u := range items {
		if !keep(u.GetName()) {
			continue
		}
		err := c.access.MayGet(ctx, namespace, account, gvk, u.GetName())
		var refused *access.DeniedError
		if errors.As(err, &refused) {
			// Reported on the set and tried again when the refusal
			// expires, so a grant takes effect.
			return nil, workloop.RetryAfter(refused.RetryAfter, fmt.Errorf("%s selects %s %q: %w", path, gvk.Kind, u.GetName(), err))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, selected{objectOf(u.GetName(), u.GetNamespace(), u.GetLabels(), u.GetAnnotations()), u.GetResourceVersion()})
	}
	return out, nil
}

// selected is an object an objectSelector selects, with its
// resourceVersion.
type selected struct {
	object  *celtemplate.Object
	version string
}

func objectOf(name, namespace string, lbls, annotations map[string]string) *celtemplate.Object {
	return &celtemplate.Object{Name: name, Namespace: namespace, Labels: lbls, Annotations: annotations}
}

func sortRepositories(repos []*configv1alpha1.Repository) {
	sortByName(repos, func(r *configv1alpha1.Repository) string { return r.Name })
}

// selectorMatches is labels.Selector.Matches over a plain map.
func selectorMatches(sel labels.Selector, lbls map[string]string) bool {
	return sel.Matches(labels.Set(lbls))
}

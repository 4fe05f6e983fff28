package packagevariantset

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchhelper "github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/prindex"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/pkg/health"
)

// A set whose rollout has spec.rollout.health counts a variant's change as
// finished only once the variant has published it and the object that
// says what its cluster runs reports that revision healthy (pkg/health
// judges). The object is in the check's namespace (default: the set's),
// named by the check's CEL expression, read from the on-demand informer of its kind, and only if
// the check's ServiceAccount may get it. Until it is judged healthy the
// variant is blocked, and failed once that outlasts progressDeadlineSeconds
// (counted from the revision's publication); judged failed, it has failed.

// healthCheck is a set's spec.rollout.health, compiled.
type healthCheck struct {
	gvk schema.GroupVersionKind
	// namespace of the objects ("": the set's).
	namespace string
	namer     *health.Namer
	judge     *health.Judge
	account   string
}

// healthMemo is what the syncs of a set keep of one variant's health
// check: the name its expression gave, for the variant's and its
// Repository's resourceVersions and its published revision; and the
// judgement, for that name, the object's resourceVersion and the revision.
type healthMemo struct {
	nameKey, name string
	nameErr       error
	judgedKey     string
	judged        health.Result
}

// gateOnHealth makes rv, a variant pv that has published its change (with
// its downstream Repository repo), finished only when its health object
// says so: blocked while it is in progress (or cannot be read), failed
// when it failed. m keeps what it worked out for the next sync.
func (c *Controller) gateOnHealth(ctx context.Context, hc *healthCheck, m *healthMemo, pv *configv1alpha1.PackageVariant, repo *configv1alpha1.Repository, rv *rollout.Variant) {
	if hc == nil || !rv.Finished || !rv.Updated || rv.Failed != "" {
		return
	}
	res, since := c.judgeHealth(ctx, hc, m, pv, repo)
	switch res.Status {
	case health.Current:
		return
	case health.Failed:
		rv.Finished, rv.Failed = false, "Unhealthy: "+res.Message
	default:
		rv.Finished, rv.Blocked, rv.BlockedSince = false, "not healthy yet: "+res.Message, since
	}
}

// judgeHealth reads and judges the health object of pv, and says since
// when it has waited for it (the publication of its revision).
func (c *Controller) judgeHealth(ctx context.Context, hc *healthCheck, m *healthMemo, pv *configv1alpha1.PackageVariant, repo *configv1alpha1.Repository) (health.Result, time.Time) {
	d := pv.Spec.Downstream
	published := porchhelper.Latest(prindex.Revisions(c.prIndexer, pv.Namespace, d.Repo, d.Package))
	if published == nil {
		return health.Result{Status: health.InProgress, Message: fmt.Sprintf("no published revision of %s/%s in the cache yet", d.Repo, d.Package)}, time.Time{}
	}
	rev := health.Revision{Name: published.Name, Revision: published.Spec.Revision}
	if published.Status.PublishedAt != nil {
		rev.Published = published.Status.PublishedAt.Time
	}
	if l := published.Status.SelfLock; l != nil && l.Git != nil {
		rev.Commit = l.Git.Commit
	}
	inProgress := func(format string, args ...any) (health.Result, time.Time) {
		return health.Result{Status: health.InProgress, Message: fmt.Sprintf(format, args...)}, rev.Published
	}
	var r health.Repository
	nameKey := pv.ResourceVersion + "/" + published.Name + "/" + published.ResourceVersion
	if repo != nil {
		r = health.Repository{Name: repo.Name, Namespace: repo.Namespace, Labels: repo.Labels, Annotations: repo.Annotations}
		nameKey += "/" + repo.ResourceVersion
	}
	if m.nameKey != nameKey {
		v := health.Variant{Name: pv.Name, Namespace: pv.Namespace, Labels: pv.Spec.Labels, Annotations: pv.Spec.Annotations, DownstreamRepo: d.Repo, Package: d.Package}
		m.nameKey = nameKey
		m.name, m.nameErr = hc.namer.Name(v, r, rev)
	}
	name := m.name
	if m.nameErr != nil {
		return inProgress("spec.rollout.health.nameExpr names no object for it: %v", m.nameErr)
	}
	ns := hc.namespace
	if ns == "" {
		ns = pv.Namespace
	}
	err := c.access.MayGetIn(ctx, pv.Namespace, hc.account, hc.gvk, ns, name)
	var denied *access.DeniedError
	switch {
	case errors.As(err, &denied):
		return inProgress("%v", err)
	case err != nil:
		return inProgress("%s %q cannot be read now: %v", hc.gvk.Kind, name, err)
	}
	obj, found, err := c.objects.Get(hc.gvk, ns, name)
	switch {
	case err != nil:
		return inProgress("%s %q cannot be read now: %v", hc.gvk.Kind, name, err)
	case !found:
		return inProgress("%s %s/%s does not exist (yet)", hc.gvk.Kind, ns, name)
	}
	u := &unstructured.Unstructured{Object: obj}
	if judgedKey := ns + "/" + name + "/" + u.GetResourceVersion() + "/" + nameKey; m.judgedKey != judgedKey || u.GetResourceVersion() == "" {
		m.judgedKey, m.judged = judgedKey, hc.judge.Judge(u, rev)
	}
	return m.judged, rev.Published
}

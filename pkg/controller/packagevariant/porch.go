package packagevariant

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/repolock"
	porchclient "github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/typed/porch/v1alpha1"
)

// porchWriter makes every write the controller sends to Porch. Writes into
// one repository go one at a time, across all workers: Porch commits each
// write to the repository's branch and loses one of two overlapping writes
// after answering it. Porch's answers are translated into the errors the
// rest of the controller reasons about: a create that already happened is
// AlreadyExists (Porch says 500), a stale resourceVersion is a Conflict
// (Porch says 500), a pipeline that fails to render is a *renderError.
type porchWriter struct {
	client porchclient.PorchV1alpha1Interface
	locks  *repolock.Locks
}

// renderError is Porch's answer to a write whose pipeline failed to
// render: a resources update, or the create of a draft. details is what the
// pipeline said; stored says whether Porch kept the files anyway
// (porch.kpt.dev/push-on-render-failure) or stored nothing.
type renderError struct {
	name    string
	details string
	stored  bool
	// functions are the failed functions and what they said, when Porch
	// stored the Kptfile that records them.
	functions []string
	// creating describes the task of a create that failed ("clone of
	// blueprints.app.v1"); "" for an update. Porch stores nothing then, and
	// its message does not name the function: candidates lists the
	// functions of the pipeline that ran, so a person knows where to look.
	creating   string
	candidates []string
	err        error
}

// retryKey is what the render-failure backoff counts the failure under: the
// draft for an update; for a create, the draft and what it is made from,
// so that a new upstream revision is tried at once.
func (e *renderError) retryKey() string {
	if e.creating == "" {
		return e.name
	}
	return createRetryKey(e.name, e.creating)
}

func createRetryKey(name, task string) string { return name + " (" + task + ")" }

func (e *renderError) Error() string {
	return fmt.Sprintf("rendering %s failed: %s", e.name, e.details)
}

func (e *renderError) Unwrap() error { return e.err }

// classify turns Porch's answer to a write into the error kinds callers
// check with apierrors: AlreadyExists, Conflict, NotFound; a render failure
// becomes a *renderError. Anything else is returned as it is.
func classify(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case helper.IsRenderFailure(err):
		details, stored := helper.RenderFailureDetails(err)
		return &renderError{name: name, details: details, stored: stored, err: err}
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return err
	case helper.IsAlreadyExists(err):
		return apierrors.NewAlreadyExists(porchv1alpha1.Resource("packagerevisions"), name)
	case helper.IsConflict(err):
		return apierrors.NewConflict(porchv1alpha1.Resource("packagerevisions"), name, err)
	}
	return err
}

// lock waits for the repository a revision lives in.
func (w *porchWriter) lock(ctx context.Context, namespace, repo string) (func(), error) {
	unlock, err := w.locks.Lock(ctx, namespace, repo)
	if err != nil {
		return nil, fmt.Errorf("wait for other writes into repository %s/%s: %w", namespace, repo, err)
	}
	return unlock, nil
}

// locked makes one write into the repository of revision pr with the
// repository's lock held, its error classified as Porch's answer about pr.
func locked[T any](ctx context.Context, w *porchWriter, pr *porchv1alpha1.PackageRevision, write func() (T, error)) (T, error) {
	unlock, err := w.lock(ctx, pr.Namespace, pr.Spec.RepositoryName)
	if err != nil {
		var none T
		return none, err
	}
	defer unlock()
	written, err := write()
	return written, classify(pr.Name, err)
}

func (w *porchWriter) create(ctx context.Context, pr *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	return locked(ctx, w, pr, func() (*porchv1alpha1.PackageRevision, error) {
		return w.client.PackageRevisions(pr.Namespace).Create(ctx, pr, metav1.CreateOptions{})
	})
}

func (w *porchWriter) update(ctx context.Context, pr *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	return locked(ctx, w, pr, func() (*porchv1alpha1.PackageRevision, error) {
		return w.client.PackageRevisions(pr.Namespace).Update(ctx, pr, metav1.UpdateOptions{})
	})
}

// delete deletes a revision. Porch ignores delete preconditions, so none
// are sent: a caller that must not delete a changed revision checks it live
// right before (see replaceDraft).
func (w *porchWriter) delete(ctx context.Context, pr *porchv1alpha1.PackageRevision) error {
	_, err := locked(ctx, w, pr, func() (struct{}, error) {
		return struct{}{}, w.client.PackageRevisions(pr.Namespace).Delete(ctx, pr.Name, metav1.DeleteOptions{})
	})
	return err
}

// retire deletes a draft the controller no longer wants, without a window
// in which a person's edit can be lost. check runs first, with the
// repository's lock held (no write of this controller into the repository
// comes between it and the delete), and returns the revision as read live
// when it may go, or nil. Porch ignores delete preconditions but honours an
// update's resourceVersion, and refuses edits of a Proposed revision: so the
// revision is first proposed, marked with the upstream it makes way for
// (configv1alpha1.ReplacingAnnotation), at the resourceVersion check read.
// A change since check read it makes Porch refuse the proposal; once it is
// Proposed, nobody's edit can be saved into it before the delete. A
// revision proposed already (a replacement a failed delete or a restart
// left half-way) is written again the same way, so a person who set it
// back to Draft and edited it after check read it keeps the edit. A
// revision Porch will not propose because its pipeline fails (Porch renders
// a Draft on every update) is deleted straight after check. proposed is
// told what Porch made of the proposal. It reports whether the revision is
// gone.
func (w *porchWriter) retire(ctx context.Context, pr *porchv1alpha1.PackageRevision, upstream string,
	check func() (*porchv1alpha1.PackageRevision, error), proposed func(*porchv1alpha1.PackageRevision)) (bool, error) {
	unlock, err := w.lock(ctx, pr.Namespace, pr.Spec.RepositoryName)
	if err != nil {
		return false, err
	}
	defer unlock()
	live, err := check()
	if err != nil || live == nil {
		return false, err
	}
	// Propose it (or, proposed already by a replacement left half-way,
	// mark it again) at the resourceVersion check read: a person who set
	// it back to Draft and edited it since makes Porch refuse the write,
	// and it is kept.
	upd := live.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[configv1alpha1.ReplacingAnnotation] = upstream
	alreadyProposed := live.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleProposed
	upd.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
	updated, err := w.client.PackageRevisions(pr.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if err = classify(pr.Name, err); err != nil {
		if _, failedRender := isRenderError(err); alreadyProposed || !failedRender {
			return false, fmt.Errorf("propose %s before deleting it: %w", pr.Name, err)
		}
	} else {
		proposed(updated)
	}
	err = classify(pr.Name, w.client.PackageRevisions(pr.Namespace).Delete(ctx, pr.Name, metav1.DeleteOptions{}))
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return true, nil
	case refusedWrite(err):
		// Someone approved the proposal in the meantime (Porch does not
		// delete a Published revision): the next sync sees what it is now.
		return false, apierrors.NewConflict(porchv1alpha1.Resource("packagerevisions"), pr.Name,
			fmt.Errorf("it changed while it was being replaced: %w", err))
	}
	return false, err
}

// refusedWrite reports whether err is the API server refusing a request
// (a 4xx), rather than failing it.
func refusedWrite(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	code := st.Status().Code
	return code >= 400 && code < 500
}

// outcomeUnknown reports whether a failed write may still have been made:
// the answer was lost (a transport error, a timeout) or the server failed
// after it started (5xx). A 4xx means the write was refused.
func outcomeUnknown(err error) bool {
	if errors.Is(err, context.Canceled) {
		return true
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true
	}
	code := st.Status().Code
	return code >= http.StatusInternalServerError || code == http.StatusRequestTimeout
}

// getResources reads a revision's files live (PackageRevisionResources are
// not watched).
func (w *porchWriter) getResources(ctx context.Context, pr *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevisionResources, error) {
	prr, err := w.client.PackageRevisionResources(pr.Namespace).Get(ctx, pr.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get resources of %s: %w", pr.Name, err)
	}
	return prr, nil
}

// updateResources stores a Draft's files; Porch renders the pipeline and
// stores the rendered files, or refuses (a *renderError).
func (w *porchWriter) updateResources(ctx context.Context, pr *porchv1alpha1.PackageRevision, prr *porchv1alpha1.PackageRevisionResources) (*porchv1alpha1.PackageRevisionResources, error) {
	return locked(ctx, w, pr, func() (*porchv1alpha1.PackageRevisionResources, error) {
		return w.client.PackageRevisionResources(pr.Namespace).Update(ctx, prr, metav1.UpdateOptions{})
	})
}

// isRenderError reports whether err is (or wraps) a render failure, and
// returns it.
func isRenderError(err error) (*renderError, bool) {
	var r *renderError
	ok := errors.As(err, &r)
	return r, ok
}

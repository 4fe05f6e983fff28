package ondemand

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultAccessRetryPeriod is how long a kind the controller may not list is
// remembered as such when Options.AccessRetryPeriod is zero.
const DefaultAccessRetryPeriod = 30 * time.Second

// aggregateLabel is the label of deploy/rbac's aggregated ClusterRole: the
// shipped way to let the controller read one more kind.
const aggregateLabel = `variant-controller.porch.kpt.dev/aggregate-to-injection: "true"`

// AccessError means the API server refused to let the controller list a
// kind: its RBAC does not grant list (Forbidden) or its credentials were not
// accepted (Unauthorized). Reads of the kind fail at once with the same
// error for RetryAfter; then the list is tried again, so a grant takes
// effect without a restart. Unlike an UnusableKindError, the spec is fine:
// the cluster's permissions must change.
type AccessError struct {
	// Resource is the resource the list was refused for, as RBAC names it.
	Resource schema.GroupResource
	// RetryAfter is how long reads fail with this error before the list is
	// tried again.
	RetryAfter time.Duration
	// err is the API server's answer; apierrors.IsForbidden and
	// IsUnauthorized see it through Unwrap.
	err error
}

func (e *AccessError) Error() string {
	if apierrors.IsUnauthorized(e.err) {
		return fmt.Sprintf("list %s: %s; the API server did not accept the controller's credentials: check its ServiceAccount and token; tried again every %s",
			e.Resource, statusMessage(e.err), e.RetryAfter)
	}
	return fmt.Sprintf("list %s: %s; grant the controller get, list and watch on %s (with the shipped RBAC: a ClusterRole with that rule and the label %s); tried again every %s",
		e.Resource, statusMessage(e.err), e.Resource, aggregateLabel, e.RetryAfter)
}

func (e *AccessError) Unwrap() error { return e.err }

// statusMessage is the API server's own words (which user, which scope),
// without the prefixes the reflector adds.
func statusMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// refusal remembers that a kind may not be listed, so that reads fail
// without asking the API server again until it is time to retry.
type refusal struct {
	err      *AccessError
	resource schema.GroupVersionResource
	until    time.Time
	// timer tries the kind again in the background at until: a grant then
	// reaches the handlers (the objects' add events) even if nothing reads
	// the kind in the meantime.
	timer clock.Timer
}

// listFailed is the watch error handler of a kind's informer. Before the
// first list succeeds it tells the waiting reads why: a refusal stops the
// informer (the reflector would retry it within a second, for ever) and is
// remembered; any other error leaves the informer retrying on its own
// backoff. Afterwards the errors are the informer's to retry and log.
func (i *Informers) listFailed(ctx context.Context, k *kindInformer, r *cache.Reflector, err error) {
	if ctx.Err() != nil {
		// Stopping: a list cut short says nothing about the kind.
		return
	}
	if cache.IsDone(k.inf.HasSyncedChecker()) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
		return
	}
	logger := klog.FromContext(ctx)
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		i.mu.Lock()
		k.fail(fmt.Errorf("list %s: %w", k.resource.GroupResource(), err))
		i.mu.Unlock()
		cache.DefaultWatchErrorHandler(ctx, r, err)
		return
	}
	denied := &AccessError{Resource: k.resource.GroupResource(), RetryAfter: i.accessRetryPeriod, err: err}
	i.mu.Lock()
	k.fail(denied)
	if i.informers[k.gvk] == k {
		delete(i.informers, k.gvk)
		ref := &refusal{err: denied, resource: k.resource, until: i.clock.Now().Add(i.accessRetryPeriod)}
		// In a goroutine: a fake clock runs the function with its own lock
		// held, and retryRefused takes i.mu, held here around clock calls.
		ref.timer = i.clock.AfterFunc(i.accessRetryPeriod, func() { go i.retryRefused(k.gvk, ref) })
		i.refused[k.gvk] = ref
	}
	i.mu.Unlock()
	k.stop()
	if k.afterRefusal {
		logger.V(2).Info("Still not allowed to list a kind named by a variant or a set", "kind", k.gvk.String(), "err", err, "retryAfter", i.accessRetryPeriod)
	} else {
		logger.Info("Not allowed to list a kind named by a variant or a set; its reads fail until it is granted", "kind", k.gvk.String(), "err", err, "retryAfter", i.accessRetryPeriod)
	}
}

// retryRefused lists a refused kind again when its refusal expires, unless
// a read has done so already.
func (i *Informers) retryRefused(gvk schema.GroupVersionKind, ref *refusal) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.ctx.Err() != nil || i.refused[gvk] != ref {
		return
	}
	delete(i.refused, gvk)
	if _, err := i.runLocked(gvk, ref.resource, true); err != nil {
		// Only a bug (a handler added to a started informer) gets here;
		// the next read tries again.
		klog.FromContext(i.ctx).Error(err, "Could not watch a kind again after a refusal", "kind", gvk.String())
	}
}

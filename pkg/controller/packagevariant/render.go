package packagevariant

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// Render retries: a draft whose pipeline failed to render is written again
// (so that Porch renders again), and a draft whose create failed to render
// is created again, on a backoff of its own, 5s doubling to 5m, for as long
// as it fails. Not sooner: Porch stores the failed files
// (push-on-render-failure), and the event of that write would otherwise
// make the variant render again at once, for ever. A change of the
// variant's inputs (its spec, its upstream, an injected object) writes at
// once, whatever the backoff.
const (
	renderRetryFirst = 5 * time.Second
	renderRetryMax   = 5 * time.Minute
)

// renderRetries remembers, per variant, the write whose render failed (its
// renderError.retryKey: the draft, or the create) and when the next attempt
// is due; client-go's flowcontrol.Backoff, keyed by the variant's UID,
// counts the failures in a row and doubles the delay.
type renderRetries struct {
	mu      sync.Mutex
	clock   clock.Clock
	backoff *flowcontrol.Backoff
	m       map[types.UID]renderRetry
}

type renderRetry struct {
	key  string
	next time.Time
}

func newRenderRetries(clk clock.Clock) *renderRetries {
	r := &renderRetries{clock: clk, m: map[types.UID]renderRetry{}}
	r.setBackoff(renderRetryFirst, renderRetryMax)
	return r
}

// setBackoff starts a backoff from first doubling to most. A render that
// keeps failing stays at most apart however long it fails: Backoff's own
// expiry (a failure 2*most after the last one starts over) would have the
// variant write a failing draft again at the first delay.
func (r *renderRetries) setBackoff(first, most time.Duration) {
	r.backoff = flowcontrol.NewBackOff(first, most)
	r.backoff.Clock = r.clock
	r.backoff.HasExpiredFunc = func(time.Time, time.Time, time.Duration) bool { return false }
}

// failed records a failed render of the write key and returns how long to
// wait before the next attempt.
func (r *renderRetries) failed(uid types.UID, key string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := string(uid)
	if r.m[uid].key != key {
		// Another write failed: its backoff starts over.
		r.backoff.Reset(id)
	}
	now := r.clock.Now()
	r.backoff.Next(id, now)
	d := r.backoff.Get(id)
	r.m[uid] = renderRetry{key: key, next: now.Add(d)}
	return d
}

// wait is how long until the next attempt of the write key is due (0: now,
// or nothing known, as after a restart).
func (r *renderRetries) wait(uid types.UID, key string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	rr, ok := r.m[uid]
	if !ok || rr.key != key {
		return 0
	}
	return max(rr.next.Sub(r.clock.Now()), 0)
}

// forget drops what is known of a variant: its render succeeded, or it is
// gone.
func (r *renderRetries) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, uid)
	r.backoff.DeleteEntry(string(uid))
}

// renderPending means a draft's last render failed, nothing it depends on
// changed, and the next attempt is not due yet.
type renderPending struct {
	draft string
	after time.Duration
}

func (e *renderPending) Error() string {
	return fmt.Sprintf("the render of %s failed; next attempt in %s", e.draft, e.after.Round(time.Second))
}

// failedSteps reads, from the Kptfile Porch stored after a failed render
// (push-on-render-failure), what each function of the pipeline did: the
// failed ones as "<function>: <what it said>", and every step as a
// function result, which is what the render status reports. Porch's API
// error only says "function failure"; the Kptfile names the function and
// carries its messages.
func failedSteps(files map[string]string) (failed []string, results []kptfilev1.Result) {
	rs := kptfilev1.RenderStatusOf(files[kptfilev1.KptFileName])
	return rs.Failures(), rs.Steps()
}

// failedRender is the render status of a resources update Porch refused:
// what the pipeline said, a non-zero exit code, and, when Porch stored the
// files, the results of each function as its Kptfile records them.
func failedRender(rerr *renderError, stored map[string]string) porchv1alpha1.RenderStatus {
	rs := porchv1alpha1.RenderStatus{Err: rerr.details}
	rs.Result.APIVersion = "kpt.dev/v1"
	rs.Result.Kind = "FunctionResultList"
	rs.Result.ExitCode = 1
	if stored != nil {
		_, rs.Result.Items = failedSteps(stored)
	}
	return rs
}

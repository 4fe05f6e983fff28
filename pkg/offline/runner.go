// Package offline runs the PackageVariant and PackageVariantSet controllers,
// unchanged, against an in-memory Porch (porchsim) until they have nothing
// more to do. variantctl uses it to show what variants and sets would
// produce before they reach a cluster; the fleet-scale benchmark uses it to
// measure the controllers, and the controllers' integration tests to run
// them. What it runs on is read by pkg/offline/input; what a change does to
// a fleet is worked out by pkg/offline/fleetdiff; a live cluster's objects
// come in through ClusterObjects, which variantctl implements.
package offline

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/controllers"
	"github.com/porch-variants/variant-controller/pkg/controller/ondemand"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
	"github.com/porch-variants/variant-controller/pkg/controller/porchwatch"
	informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
	"github.com/porch-variants/variant-controller/pkg/metrics"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// Options tune a Runner.
type Options struct {
	// Objects are the in-cluster objects (ConfigMaps and any other kind)
	// that config injection and objectSelectors read. During a run they
	// change only through Runner.CreateObject and Runner.UpdateObject.
	Objects []*unstructured.Unstructured
	// Kinds are further kinds the cluster serves, with no objects: an
	// injector or objectSelector naming one of them finds nothing instead
	// of reporting an unknown kind. ConfigMap and Secret are always served.
	Kinds []schema.GroupVersionKind
	// Live, when set, serves the objects of a cluster too: each kind in
	// each namespace is listed from the cluster the first time the
	// controllers list it (Objects given here take the place of the
	// cluster's of the same kind, namespace and name).
	Live ClusterObjects
	// Workers per controller; 0 means 2.
	Workers int
	// Metrics, when set, receives the controllers' metrics.
	Metrics *metrics.Metrics
	// SetsOnly runs only the PackageVariantSet controller: variants are
	// created but nothing makes their drafts.
	SetsOnly bool
	// ReadinessDelay is how long a readiness change of a variant waits
	// before it wakes its set, batched with others. variantctl uses 0 (no
	// waiting); the in-cluster controller waits
	// packagevariantset.DefaultReadinessDelay.
	ReadinessDelay time.Duration
	// User, when set, is the client of the Sim the controllers act as
	// (Sim.ClientsetAs): controllers started again, as a new process would
	// be, are then a client of their own, whose writes the Sim does not
	// take for an overlap with the old ones'. "": Sim.Clientset().
	User string
	// Access, when set, bounds what variants and sets may read by their
	// ServiceAccounts, as in a cluster; nil (variantctl) reads what the
	// input holds.
	Access *access.Checker
}

// Event is an Event a controller recorded.
type Event struct {
	Object  string // Kind namespace/name
	Type    string // Normal or Warning
	Reason  string
	Message string
}

// Runner is both controllers running against a Sim.
type Runner struct {
	sim      *porchsim.Sim
	user     string // the controllers' client of the Sim (Options.User)
	tracker  *workloop.Tracker
	progress *progress
	resync   *workloop.Resync
	built    []controllers.Built
	objects  *clusterObjects

	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	events   []Event
	runErr   error
	stopOnce sync.Once
}

// Start runs both controllers against sim until Stop (or ctx is done). The
// Sim should hold everything the run starts from; more may be added while
// the controllers run (as tests and the benchmark do).
func Start(ctx context.Context, sim *porchsim.Sim, opts Options) (*Runner, error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = 2
	}
	objs, err := objectClient(opts.Objects, opts.Kinds, opts.Live)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Runner{
		sim:      sim,
		user:     opts.User,
		tracker:  workloop.NewTracker(),
		resync:   &workloop.Resync{},
		progress: newProgress(sim),
		objects:  objs,
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	objects := ondemand.New(ctx, ondemand.Options{Dynamic: objs.dyn, Mapper: objs.mapper})
	client := sim.Clientset()
	if opts.User != "" {
		client = sim.ClientsetAs(opts.User)
	}
	factory := informers.NewSharedInformerFactory(porchwatch.RelistOnResume(client), 0)
	pvInf := track(r.progress, "packagevariants", factory.Config().V1alpha1().PackageVariants())
	setInf := track(r.progress, "packagevariantsets", factory.Config().V1alpha2().PackageVariantSets())
	repoInf := track(r.progress, "repositories", factory.Config().V1alpha1().Repositories())
	prInf := track(r.progress, "packagerevisions", factory.Porch().V1alpha1().PackageRevisions())

	recorder := &eventRecorder{r: r}
	enabled := controllers.Names
	if opts.SetsOnly {
		enabled = []string{packagevariantset.ControllerName}
	}
	delay := opts.ReadinessDelay
	built, err := controllers.Build(ctx, controllers.Dependencies{
		Client: client,
		Informers: controllers.Informers{
			PackageVariants:    pvInf,
			PackageVariantSets: setInf,
			Repositories:       repoInf,
			PackageRevisions:   prInf,
		},
		Objects:  objects,
		Access:   opts.Access,
		Recorder: recorder,
		Metrics:  opts.Metrics,
	}, controllers.Options{Enabled: enabled, Tracker: r.tracker, Resync: r.resync, ReadinessDelay: &delay})
	if err != nil {
		cancel()
		return nil, err
	}
	r.built = built
	// after the controllers' handlers: a write's wait ends once they heard
	objects.AddHandler(objs.heard)
	objs.handlersSynced = objects.HandlersSynced
	r.run(ctx, factory, workers)
	return r, nil
}

// run starts the informers and the built controllers; r.done is closed
// once every controller has returned and the informers are shut down.
func (r *Runner) run(ctx context.Context, factory informers.SharedInformerFactory, workers int) {
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	for _, b := range r.built {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A Run that ends because the run stops (before the caches
			// synced, say) is shutdown, not an error. Offline, a stop is a
			// crash: the syncs in progress are cut off (a CEL evaluation
			// included), so variantctl's --timeout is kept and the soak's
			// restarts stop the controllers half-way.
			if err := b.Controller.Run(workloop.WithFence(ctx, ctx), workers); err != nil && ctx.Err() == nil {
				r.mu.Lock()
				r.runErr = err
				r.mu.Unlock()
			}
		}()
	}
	go func() {
		wg.Wait()
		factory.Shutdown()
		close(r.done)
	}()
}

// Stop stops the controllers and waits for them.
func (r *Runner) Stop() {
	r.stopOnce.Do(func() {
		r.cancel()
		<-r.done
	})
}

// Idle reports whether the controllers have nothing to do: every change the
// Sim delivered has been handled, no sync runs, no key waits in a queue and
// no failed key waits for a retry.
func (r *Runner) Idle() bool {
	return r.progress.caughtUp() && r.tracker.Idle() && r.queued() == 0
}

// settleChecks is how many consecutive checks, pollInterval apart, must
// find the controllers idle with nothing happening in between.
const (
	settleChecks = 3
	pollInterval = 2 * time.Millisecond
)

// WaitIdle waits until the controllers are idle and stay so, or until
// timeout. On timeout it says what is still in hand.
func (r *Runner) WaitIdle(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	quiet, last := 0, -1
	for {
		if err := r.err(); err != nil {
			return err
		}
		// activity changes with every sync; a quiet stretch of idle checks
		// with no sync in between closes the gap between a key leaving the
		// queue and its sync being counted as running.
		activity := r.tracker.Syncs(packagevariant.ControllerName) + r.tracker.Syncs(packagevariantset.ControllerName)
		if r.Idle() && activity == last {
			quiet++
			if quiet >= settleChecks {
				return r.overlaps()
			}
		} else {
			quiet = 0
		}
		last = activity
		select {
		case <-ctx.Done():
			return fmt.Errorf("the controllers did not settle within %s: %s", timeout, r.busy())
		case <-ticker.C:
		}
	}
}

// overlaps is an error when the controllers made writes into one
// repository that overlapped: real Porch can lose one of them, so it is a
// defect of the controllers, never of the input.
func (r *Runner) overlaps() error {
	o := r.sim.OverlapsOf(r.user)
	if len(o) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(o))
	for _, x := range o {
		msgs = append(msgs, x.String())
	}
	return fmt.Errorf("the controllers overlapped writes into one repository, which real Porch can lose (a defect of variant-controller, please report it): %s",
		strings.Join(msgs, "; "))
}

func (r *Runner) busy() string {
	var parts []string
	if !r.progress.caughtUp() {
		parts = append(parts, "informers still delivering changes")
	}
	if n := r.queued(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d keys queued or waiting for the readiness delay", n))
	}
	if !r.tracker.Idle() {
		msg := "syncs running or failed syncs waiting for a retry"
		if f := r.tracker.Failing(); len(f) > 0 {
			if len(f) > 3 {
				f = append(f[:3:3], fmt.Sprintf("%d more", len(f)-3))
			}
			msg += " (" + strings.Join(f, "; ") + ")"
		}
		parts = append(parts, msg)
	}
	if len(parts) == 0 {
		return "work kept arriving"
	}
	return strings.Join(parts, "; ")
}

func (r *Runner) queued() int { return r.tracker.Queued() }

func (r *Runner) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runErr
}

// Err returns the error a controller's Run failed with while the run went
// on (WaitIdle returns it too); a Run ended by Stop is no error.
func (r *Runner) Err() error { return r.err() }

// Failing describes the keys whose last sync failed and that wait for a
// retry (see workloop.Tracker.Failing), for messages.
func (r *Runner) Failing() []string { return r.tracker.Failing() }

// Controller returns the running controller of that name (see
// controllers.Names), nil if it does not run. Tests type-assert it to
// reach into the controller.
func (r *Runner) Controller(name string) controllers.Controller {
	for _, b := range r.built {
		if b.Name == name {
			return b.Controller
		}
	}
	return nil
}

// SyncsOf returns how many syncs of key the named controller ran.
func (r *Runner) SyncsOf(controller string, key cache.ObjectName) int {
	return r.tracker.SyncsOf(controller, key)
}

// Syncs returns how many syncs each controller ran (by controller name).
func (r *Runner) Syncs() map[string]int {
	return map[string]int{
		packagevariant.ControllerName:    r.tracker.Syncs(packagevariant.ControllerName),
		packagevariantset.ControllerName: r.tracker.Syncs(packagevariantset.ControllerName),
	}
}

// SyncTime is how long each controller's syncs took, in all (wall time),
// by controller name.
func (r *Runner) SyncTime() map[string]time.Duration {
	return map[string]time.Duration{
		packagevariant.ControllerName:    r.tracker.Busy(packagevariant.ControllerName),
		packagevariantset.ControllerName: r.tracker.Busy(packagevariantset.ControllerName),
	}
}

// ResyncVariants queues every PackageVariant, as a full informer resync
// would.
func (r *Runner) ResyncVariants() { r.resync.Now() }

// Events returns the Events the controllers recorded, in order.
func (r *Runner) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// eventRecorder keeps the controllers' Events.
type eventRecorder struct{ r *Runner }

func (e *eventRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		if t := fmt.Sprintf("%T", obj); strings.Contains(t, ".") {
			kind = t[strings.LastIndex(t, ".")+1:]
		}
	}
	name := ""
	if m, err := meta.Accessor(obj); err == nil {
		name = m.GetNamespace() + "/" + m.GetName()
	}
	e.r.mu.Lock()
	defer e.r.mu.Unlock()
	e.r.events = append(e.r.events, Event{Object: kind + " " + name, Type: eventtype, Reason: reason, Message: message})
}

func (e *eventRecorder) Eventf(obj runtime.Object, eventtype, reason, format string, args ...interface{}) {
	e.Event(obj, eventtype, reason, fmt.Sprintf(format, args...))
}

func (e *eventRecorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, format string, args ...interface{}) {
	e.Eventf(obj, eventtype, reason, format, args...)
}

var _ record.EventRecorder = (*eventRecorder)(nil)

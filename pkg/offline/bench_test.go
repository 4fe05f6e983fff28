package offline

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
)

// BenchmarkFleet runs the fleet scenario (see fleet_test.go) at fleet
// scale. Each phase is a sub-benchmark, BenchmarkFleet/variants=N/<phase>,
// whose timed part is that phase alone: one event for the whole fleet and
// the wait until the controllers have settled on it. The phases before it
// run untimed to set the fleet up. Besides the phase's wall time (ns/op)
// each reports what it cost per variant: API requests in total and by verb
// and resource, PackageVariant syncs and bytes allocated; and the set's
// syncs (in all and per variant), the time they took and the CPU they used
// per variant (wall time, and CPU from a profile of the phase: not under
// -cpuprofile, which holds the profiler), the peak heap during the phase and the heap the fleet keeps after
// it. Run it with -benchtime=1x (`make bench`): a larger b.N repeats the
// set-up of every phase as well.
func BenchmarkFleet(b *testing.B) {
	// client-go logs every cache sync through klog's global logger; at one
	// Runner per phase and size that only buries the figures.
	klog.SetLogger(discardLogger)
	defer klog.ClearLogger()
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("variants=%d", n), func(b *testing.B) {
			for _, name := range []string{"converge", "resync", "publish", "bump"} {
				b.Run(name, func(b *testing.B) { benchmarkStep(b, n, plainFleet, name) })
			}
			// The rollout scenario (rollout_fleet_test.go): its own fleet,
			// whose set rolls the bump out in waves; then the same, each
			// variant finishing on its cluster's health.
			b.Run("rollout", func(b *testing.B) { benchmarkStep(b, n, rolloutFleet, "rollout") })
			b.Run("rollout-health", func(b *testing.B) { benchmarkStep(b, n, healthFleet, "rollout") })
		})
	}
}

// benchmarkStep measures the named step of the scenario of kind on a
// fleet of n.
func benchmarkStep(b *testing.B, n int, kind fleetKind, name string) {
	var sum phase
	for range b.N {
		b.StopTimer()
		f := newFleet(b, n, kind)
		steps := f.steps()
		i := slices.IndexFunc(steps, func(s fleetStep) bool { return s.name == name })
		for _, s := range steps[:i] {
			f.runStep(b, s)
		}
		b.StartTimer()
		p := steps[i].run(b)
		b.StopTimer()
		if problems := steps[i].check(); len(problems) > 0 {
			b.Fatalf("after %s (n=%d): %s", steps[i].name, n, firstProblems(problems, 5))
		}
		f.runner.Stop()
		sum.add(p)
	}
	sum.report(b, n, b.N)
}

func (p *phase) add(o phase) {
	p.wall += o.wall
	p.allocated += o.allocated
	p.peakHeap = max(p.peakHeap, o.peakHeap)
	p.liveHeap = max(p.liveHeap, o.liveHeap)
	if p.requests == nil {
		p.requests = map[string]int{}
		p.syncs = map[string]int{}
		p.syncTime = map[string]time.Duration{}
		p.syncCPU = map[string]time.Duration{}
	}
	for k, v := range o.requests {
		p.requests[k] += v
	}
	for k, v := range o.syncs {
		p.syncs[k] += v
	}
	for k, v := range o.syncTime {
		p.syncTime[k] += v
	}
	for k, v := range o.syncCPU {
		p.syncCPU[k] += v
	}
}

// report turns the sums of runs runs over n variants into metrics.
func (p phase) report(b *testing.B, n, runs int) {
	per := float64(n * runs)
	b.ReportMetric(float64(p.totalRequests())/per, "req/variant")
	for k, v := range p.requests {
		// "update packagevariants/status" -> "update:packagevariants.status/variant"
		unit := strings.ReplaceAll(strings.ReplaceAll(k, " ", ":"), "/", ".")
		b.ReportMetric(float64(v)/per, unit+"/variant")
	}
	b.ReportMetric(float64(p.syncs[packagevariant.ControllerName])/per, "pv-syncs/variant")
	b.ReportMetric(float64(p.syncs[packagevariantset.ControllerName])/float64(runs), "set-syncs/op")
	b.ReportMetric(float64(p.syncs[packagevariantset.ControllerName])/per, "set-syncs/variant")
	b.ReportMetric(float64(p.syncTime[packagevariantset.ControllerName].Microseconds())/per, "set-sync-µs/variant")
	if cpu, ok := p.syncCPU[packagevariantset.ControllerName]; ok {
		b.ReportMetric(float64(cpu.Microseconds())/per, "set-cpu-µs/variant")
	}
	b.ReportMetric(float64(p.allocated)/per, "B/variant")
	b.ReportMetric(float64(p.peakHeap)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(p.liveHeap)/(1<<20), "live-heap-MB")
}

package offline

import (
	"fmt"
	"strings"
	"testing"

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
// syncs, the peak heap during the phase and the heap the fleet keeps after
// it. Run it with -benchtime=1x (`make bench`): a larger b.N repeats the
// set-up of every phase as well.
func BenchmarkFleet(b *testing.B) {
	// client-go logs every cache sync through klog's global logger; at one
	// Runner per phase and size that only buries the figures.
	klog.SetLogger(discardLogger)
	defer klog.ClearLogger()
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("variants=%d", n), func(b *testing.B) {
			for i, name := range []string{"converge", "resync", "publish", "bump"} {
				b.Run(name, func(b *testing.B) { benchmarkStep(b, n, i) })
			}
		})
	}
}

// benchmarkStep measures step i of the scenario on a fleet of n.
func benchmarkStep(b *testing.B, n, i int) {
	var sum phase
	for range b.N {
		b.StopTimer()
		f := newFleet(b, n)
		steps := f.steps()
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
	}
	for k, v := range o.requests {
		p.requests[k] += v
	}
	for k, v := range o.syncs {
		p.syncs[k] += v
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
	b.ReportMetric(float64(p.allocated)/per, "B/variant")
	b.ReportMetric(float64(p.peakHeap)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(p.liveHeap)/(1<<20), "live-heap-MB")
}

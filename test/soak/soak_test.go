// Package soak runs both controllers against porchsim under combined
// faults (API errors with and without effect, conflicts, lagging and broken
// watches, controller restarts mid-sync) while people act on the same
// objects, then checks that nothing was lost and everything converged.
// A second set rolls out each new upstream revision in waves while people
// publish its drafts: the monitor checks that no variant gets the change
// before its wave may start and that no wave holds more open changes than
// its maxConcurrent, and at the end the rollout of the newest revision must
// be complete (see rolloutMonitor).
//
// `make test` runs a short fixed-seed soak; `make soak` runs many seeds:
//
//	go test -race ./test/soak -soak.seeds 30 -soak.duration 20s
//
// Every third seed is busy (config.busy): one CPU, late answers, and people
// who act inside the window a late answer opens.
//
// A failure prints its seed, the violations and the history of the objects
// involved; -soak.seed N -soak.seeds 1 replays that seed. The same seed
// gives the same fleet and the same random draws; how they interleave with
// the controllers' goroutines still varies from run to run.
package soak

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	flagSeeds    = flag.Int("soak.seeds", 0, "how many seeds to soak (0: the short fixed-seed soak of make test)")
	flagSeed     = flag.Int64("soak.seed", 1, "the first seed")
	flagDuration = flag.Duration("soak.duration", 0, "how long faults and people act in each seed (0: the default of the mode)")
	flagSites    = flag.Int("soak.sites", 0, "site repositories in the fleet (0: the default of the mode)")
	flagSettle   = flag.Duration("soak.settle", 3*time.Minute, "how long the controllers may take to converge once faults stop")
	flagReport   = flag.String("soak.report", "", "write the totals, as Markdown, to this file")
)

// config is one seed's soak.
type config struct {
	seed     int64
	duration time.Duration
	// sites is how many site repositories the set can select.
	sites int
	// hand is how many hand-written PackageVariants there are.
	hand int
	// settle bounds the wait for convergence once faults stop.
	settle time.Duration
	// busy seeds (every third: seed 2, 5, 8, ...) meet the timings of a
	// machine busy with other work, where the soak once lost a person's
	// edit that an idle machine never showed: they run on one CPU
	// (GOMAXPROCS 1), and two in five of the controllers' writes into
	// drafts (and every write of theirs into a draft whose answer a fault
	// loses) get their answer, or lose it (two times in three), only once
	// a person has edited that draft (a second at most): the edit lands
	// between the controllers' write and their next step.
	busy bool
	// adopt: the rollout set is made without spec.rollout and a person
	// adds it while faults and people act (odd seeds): a live set adopts
	// its rollout.
	adopt bool
	// health: the rollout set's waves are gated on each site's health
	// object (a ConfigMap health-<site>), which flips between healthy and
	// failed for the published revision while faults and people act
	// (seeds 2 and 3 of every 4).
	health bool
}

// busySeed says which seeds are busy.
func busySeed(seed int64) bool { return seed%3 == 2 }

// adoptSeed and healthSeed say which seeds adopt their rollout while live
// and which gate it on health.
func adoptSeed(seed int64) bool  { return seed%2 == 1 }
func healthSeed(seed int64) bool { return seed%4 >= 2 }

func TestSoak(t *testing.T) {
	seeds, duration, sites := 2, 3*time.Second, 12
	if *flagSeeds > 0 {
		seeds, duration, sites = *flagSeeds, 20*time.Second, 50
	}
	if *flagDuration > 0 {
		duration = *flagDuration
	}
	if *flagSites > 0 {
		sites = *flagSites
	}
	var (
		mu     sync.Mutex
		totals = newCounts()
		failed []int64
	)
	start := time.Now()
	for i := range seeds {
		seed := *flagSeed + int64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			c := runSeed(t, config{seed: seed, duration: duration, sites: sites, hand: 10, settle: *flagSettle, busy: busySeed(seed),
				adopt: adoptSeed(seed), health: healthSeed(seed)})
			mu.Lock()
			defer mu.Unlock()
			totals.add(c)
			if t.Failed() {
				failed = append(failed, seed)
			}
		})
	}
	report := totals.report(seeds, *flagSeed, duration, sites, failed, time.Since(start))
	t.Log("\n" + report)
	if *flagReport != "" {
		if err := os.WriteFile(*flagReport, []byte(report), 0o644); err != nil {
			t.Errorf("write the report: %v", err)
		}
	}
}

// counts are what a soak did, by kind.
type counts struct {
	faults  map[string]int
	actions map[string]int
	// rollout counts what the rollout set did (see rolloutMonitor).
	rollout    map[string]int
	restarts   int
	holds      int
	breaks     int
	violations int
	requests   int
	// unverified counts variants reporting DraftUnverified: a stale draft
	// kept because the controller could not tell its files from a
	// person's (a DraftEdited with no person's edit is a violation).
	unverified int
}

func newCounts() *counts {
	return &counts{faults: map[string]int{}, actions: map[string]int{}, rollout: map[string]int{}}
}

func (c *counts) add(o *counts) {
	if o == nil {
		return
	}
	for k, v := range o.faults {
		c.faults[k] += v
	}
	for k, v := range o.actions {
		c.actions[k] += v
	}
	for k, v := range o.rollout {
		c.rollout[k] += v
	}
	c.restarts += o.restarts
	c.holds += o.holds
	c.breaks += o.breaks
	c.violations += o.violations
	c.requests += o.requests
	c.unverified += o.unverified
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func (c *counts) report(seeds int, first int64, d time.Duration, sites int, failed []int64, took time.Duration) string {
	var b strings.Builder
	busy, adopt, health := 0, 0, 0
	for seed := first; seed < first+int64(seeds); seed++ {
		if busySeed(seed) {
			busy++
		}
		if adoptSeed(seed) {
			adopt++
		}
		if healthSeed(seed) {
			health++
		}
	}
	fmt.Fprintf(&b, "Soak: %d seeds (%d..%d, %d of them busy: one CPU, late answers), %s of faults and people each, one set over the env=prod ones of %d site repositories, one over %d of them rolling out in waves (adopted by the live set in %d seeds, gated on health objects that flip in %d), and 10 hand-written variants; %s in all.\n\n",
		seeds, first, first+int64(seeds)-1, busy, d, sites, min(sites, rolloutSites), adopt, health, took.Round(time.Second))
	fmt.Fprintf(&b, "| what | count |\n|---|---:|\n")
	row := func(what string, n int) { fmt.Fprintf(&b, "| %s | %d |\n", what, n) }
	// each of m by name, then their sum
	breakdown := func(prefix string, m map[string]int, total string) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			row(prefix+k, m[k])
		}
		row(total, sum(m))
	}
	row("controller requests", c.requests)
	breakdown("fault: ", c.faults, "faults in all")
	row("watch holds (lagging caches)", c.holds)
	row("broken watches", c.breaks)
	row("controller restarts", c.restarts)
	breakdown("person: ", c.actions, "people's actions in all")
	for _, k := range slices.Sorted(maps.Keys(c.rollout)) {
		row("rollout: "+k, c.rollout[k])
	}
	row("DraftUnverified: stale draft kept, its files not known to be the controller's", c.unverified)
	row("violations", c.violations)
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\nFailed seeds: %v\n", failed)
	}
	return b.String()
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// TestScenario runs the scenario (scenario_test.go) against each backend,
// each in a namespace of its own. With two backends (porchsim and a Porch
// the user brought) it compares them, step by step, after normalising what
// is legitimately different (commit SHAs, the namespace, timestamps). Every
// other difference fails the test unless knownDifferences lists it with the
// reason it cannot matter to the controllers. This is what keeps porchsim
// honest: when the two disagree, Porch is right.
func TestScenario(t *testing.T) {
	runs := map[string]*scenario{}
	forEachBackend(t, func(t *testing.T, b *backend) {
		runs[b.name] = runScenario(t, b, b.ns("scenario"))
	})
	porch, sim := runs[backendPorch], runs[backendPorchsim]
	if porch == nil || sim == nil || t.Failed() {
		reportf(t, "differential check: not run (it needs a passing run on both porchsim and Porch)")
		return
	}
	compareRuns(t, porch, sim)
}

// compareRuns compares the snapshots of two runs, step by step.
func compareRuns(t *testing.T, porch, sim *scenario) {
	t.Helper()
	if len(porch.snapshots) != len(sim.snapshots) {
		t.Fatalf("porch ran %d steps, porchsim %d", len(porch.snapshots), len(sim.snapshots))
	}
	for i := range porch.snapshots {
		p, s := porch.snapshots[i], sim.snapshots[i]
		diff := cmp.Diff(p.snap.without(knownDifferences), s.snap.without(knownDifferences))
		if diff != "" {
			t.Errorf("after step %q, porchsim differs from Porch (-porch +porchsim):\n%s", p.step, diff)
		}
	}
	var known []string
	for _, k := range knownDifferences {
		known = append(known, fmt.Sprintf("%s: %s", k.what, k.why))
	}
	reportf(t, "differential check: %d steps compared; differences left out, each with why it cannot matter:\n  %s",
		len(porch.snapshots), strings.Join(known, "\n  "))
}

// knownDifference is a part of the state that differs between Porch and
// porchsim for a reason that cannot matter to the controllers.
type knownDifference struct {
	what string
	why  string
	// drop removes it from a snapshot.
	drop func(*snapshot)
}

// knownDifferences are the differences the check leaves out. Keep the list
// short: each entry is a place where porchsim is not Porch.
var knownDifferences = []knownDifference{
	{
		what: "why a function that is not built into Porch could not run",
		why: "Porch's message is its function runner's gRPC error (the address it dials, connection refused), porchsim's says there is " +
			"no function runner; both fail the render the same way, and the controllers only pass the text on into the condition",
		drop: func(s *snapshot) { s.rewrite(functionRunnerError, "func eval $1 failed: FUNCTION RUNNER UNREACHABLE") },
	},
	{
		what: "the tasks of a package's placeholder revision (<repo>.<package>.main)",
		why: "Porch reads them from its git history (the last commit of the package on main), which porchsim does not have; porchsim " +
			"shows the latest published revision's; the controllers never act on a placeholder (isPlaceholder)",
		drop: func(s *snapshot) {
			for name, r := range s.Revisions {
				if r.Revision == -1 {
					r.Tasks = nil
					s.Revisions[name] = r
				}
			}
		},
	},
}

// functionRunnerError is the error of a function the server could not run,
// as real Porch (gRPC) and porchsim word it; $1 is the image as quoted.
var functionRunnerError = regexp.MustCompile(`func eval ("[^"]*"|\\"[^"]*\\") failed: (rpc error: code = Unavailable desc = connection error: desc = \\?"transport: Error while dialing: dial tcp [0-9.:]+: connect: connection refused\\?"|no function runner: only Porch's built-in functions \(set-namespace, apply-replacements, starlark\) can run)`)

// rewrite replaces every match of re, in every string of the snapshot.
func (s *snapshot) rewrite(re *regexp.Regexp, repl string) {
	fix := func(in []string) []string {
		out := make([]string, len(in))
		for i, v := range in {
			out[i] = re.ReplaceAllString(v, repl)
		}
		return out
	}
	for name, r := range s.Revisions {
		r.Conditions = fix(r.Conditions)
		for p, content := range r.Files {
			r.Files[p] = re.ReplaceAllString(content, repl)
		}
		s.Revisions[name] = r
	}
	for name, v := range s.Variants {
		v.Conditions, v.Targets = fix(v.Conditions), fix(v.Targets)
		s.Variants[name] = v
	}
}

// snapshot is the state of a run after a step, normalised: what the
// controllers read and write, and what people see.
type snapshot struct {
	Revisions map[string]revisionView
	Variants  map[string]variantView
	// Requests are the kinds of writes the controller made in the step,
	// with the codes they got ("update porch.kpt.dev/
	// packagerevisionresources 500"), and the reads a backend refused or
	// failed, not how many: a code one backend answers and the other never
	// does means they behave differently. A read that succeeded, or found
	// nothing, is left out, as are lists and watches: whether the
	// controller reads again follows how fast the backend answers and the
	// informers catch up (a slower backend's event can arrive after the
	// step's last sync and bring one more GET), not what it did.
	Requests []string
}

// revisionView is a PackageRevision and its files as the comparison sees
// them.
type revisionView struct {
	Lifecycle, Workspace string
	Revision             int
	Labels, Annotations  map[string]string
	Owners               []string
	Tasks                []string
	ReadinessGates       []string
	Conditions           []string
	UpstreamLock         string
	SelfLock             string
	PublishedBy          string
	Deployment           bool
	Files                map[string]string
}

// variantView is a PackageVariant as the comparison sees it.
type variantView struct {
	Conditions []string
	Targets    []string
	Applied    string
	Finalizers []string
}

func (s snapshot) without(known []knownDifference) snapshot {
	out := snapshot{Revisions: map[string]revisionView{}, Variants: map[string]variantView{}, Requests: s.Requests}
	for k, v := range s.Revisions {
		v.Files = maps.Clone(v.Files)
		out.Revisions[k] = v
	}
	for k, v := range s.Variants {
		out.Variants[k] = v
	}
	for _, k := range known {
		k.drop(&out)
	}
	return out
}

// requestKinds lists the distinct kinds of the controller's writes in a
// summary, with their codes, and of its reads the backend refused or
// failed (snapshot.Requests says why the others are left out).
func requestKinds(sum e2eutil.Summary) []string {
	var out []string
	for r, codes := range sum.ByRequestCode {
		// Events are left out too: whether a repeated Event is created or
		// patched depends on the recorder's timing, not on the backend.
		if r.Verb == "list" || r.Verb == "watch" || r.Group == "" && (strings.HasPrefix(r.Resource, "/") || r.Resource == "events") {
			continue
		}
		for code := range codes {
			if isRead(r.Verb) && (code < 400 || code == http.StatusNotFound) {
				continue
			}
			out = append(out, fmt.Sprintf("%s %s/%s %d", r.Verb, r.Group, r.Resource, code))
		}
	}
	sort.Strings(out)
	return out
}

// isRead reports whether an audit verb only reads.
func isRead(verb string) bool {
	return verb == "get" || verb == "head"
}

// snapshot takes the normalised state of this run.
func (s *scenario) snapshot(t *testing.T) snapshot {
	t.Helper()
	ctx := context.Background()
	norm := s.normaliser()
	snap := snapshot{Revisions: map[string]revisionView{}, Variants: map[string]variantView{}}
	pvs, err := env.admin.ConfigV1alpha1().PackageVariants(s.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	variantOf := map[string]string{}
	for _, pv := range pvs.Items {
		variantOf[string(pv.UID)] = pv.Name
		v := variantView{Finalizers: pv.Finalizers}
		for _, c := range pv.Status.Conditions {
			v.Conditions = append(v.Conditions, norm(fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)))
		}
		for _, tg := range pv.Status.DownstreamTargets {
			v.Targets = append(v.Targets, norm(fmt.Sprintf("%s err=%q exitCode=%d", tg.Name, tg.RenderStatus.Err, tg.RenderStatus.Result.ExitCode)))
		}
		if a := pv.Status.Applied; a != nil {
			v.Applied = norm(fmt.Sprintf("%s from %s injected %v", a.Downstream, a.Upstream, a.Injected))
		}
		snap.Variants[pv.Name] = v
	}
	for _, pr := range s.revisions(t) {
		r := revisionView{
			Lifecycle: string(pr.Spec.Lifecycle), Workspace: string(pr.Spec.WorkspaceName), Revision: pr.Spec.Revision,
			Labels: pr.Labels, Annotations: maps.Clone(pr.Annotations), PublishedBy: pr.Status.PublishedBy, Deployment: pr.Status.Deployment,
		}
		if _, ok := r.Annotations[configv1alpha1.DraftIDAnnotation]; ok {
			// Made up at each create: that it is kept is what compares.
			r.Annotations[configv1alpha1.DraftIDAnnotation] = "ID"
		}
		for _, ref := range pr.OwnerReferences {
			owner := variantOf[string(ref.UID)]
			if owner == "" {
				owner = "(gone) " + ref.Name
			}
			r.Owners = append(r.Owners, fmt.Sprintf("%s/%s controller=%v", ref.Kind, owner, ref.Controller != nil && *ref.Controller))
		}
		for _, task := range pr.Spec.Tasks {
			described := helper.DescribeTask(task)
			if task.Upgrade != nil {
				described += " (" + string(task.Upgrade.Strategy) + ")"
			}
			r.Tasks = append(r.Tasks, norm(described))
		}
		for _, g := range pr.Spec.ReadinessGates {
			r.ReadinessGates = append(r.ReadinessGates, g.ConditionType)
		}
		for _, c := range pr.Status.Conditions {
			r.Conditions = append(r.Conditions, norm(fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)))
		}
		if l := pr.Status.UpstreamLock; l != nil && l.Git != nil {
			r.UpstreamLock = norm(fmt.Sprintf("%s %s %s %s", l.Git.Repo, l.Git.Directory, l.Git.Ref, l.Git.Commit))
		}
		if l := pr.Status.SelfLock; l != nil && l.Git != nil {
			r.SelfLock = norm(fmt.Sprintf("%s %s %s", l.Git.Repo, l.Git.Directory, l.Git.Ref))
		}
		prr, err := env.admin.PorchV1alpha1().PackageRevisionResources(s.ns).Get(ctx, pr.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r.Files = map[string]string{}
		for p, content := range prr.Spec.Resources {
			r.Files[p] = norm(content)
		}
		snap.Revisions[pr.Name] = r
	}
	return snap
}

var sha = regexp.MustCompile(`\b[0-9a-f]{40}\b`)

// normaliser returns a function that takes out of a text what must differ
// between two runs: commit SHAs, the run's namespace (in git URLs too).
func (s *scenario) normaliser() func(string) string {
	gitPrefix := env.git.URL + "/" + s.ns + "-"
	return func(text string) string {
		text = strings.ReplaceAll(text, gitPrefix, "GIT/")
		text = strings.ReplaceAll(text, s.ns, "NAMESPACE")
		return sha.ReplaceAllString(text, "COMMIT")
	}
}

package offline

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// Snapshot remembers the resourceVersion of every PackageRevision, so that
// an Outcome can tell what a run created or changed.
type Snapshot map[string]string

// TakeSnapshot records the Sim's PackageRevisions.
func TakeSnapshot(ctx context.Context, sim *porchsim.Sim) (Snapshot, error) {
	prs, err := sim.Clientset().PorchV1alpha1().PackageRevisions("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	s := Snapshot{}
	for _, pr := range prs.Items {
		s[pr.Namespace+"/"+pr.Name] = pr.ResourceVersion
	}
	return s, nil
}

// Actions on a package revision.
const (
	ActionCreated = "created"
	ActionChanged = "changed"
	ActionDeleted = "deleted"
)

// RevisionOutcome is a package revision a run created, changed or deleted.
type RevisionOutcome struct {
	PR     *porchv1alpha1.PackageRevision
	Files  map[string]string
	Action string
	// NotRun lists the images of the pipeline functions that were not run
	// offline: only Porch's function runner can run them. The files are
	// what the other functions made; on Porch these run too (and may fail).
	NotRun []string
}

// NotRunAnnotation marks, in the YAML output, a revision whose pipeline had
// functions that did not run offline; its value lists their images.
const NotRunAnnotation = "variantctl.porch.kpt.dev/functions-not-run"

// Outcome is the state after a run.
type Outcome struct {
	Sets      []*configv1alpha2.PackageVariantSet
	Variants  []*configv1alpha1.PackageVariant
	Revisions []RevisionOutcome
	Events    []Event
	// Settled is empty when the controllers settled; otherwise it says
	// what was still in hand when the run stopped.
	Settled string
}

// Collect reads the outcome of a run from the Sim.
func Collect(ctx context.Context, sim *porchsim.Sim, before Snapshot, events []Event) (*Outcome, error) {
	client := sim.Clientset()
	out := &Outcome{Events: events}
	sets, err := client.ConfigV1alpha2().PackageVariantSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range sets.Items {
		out.Sets = append(out.Sets, &sets.Items[i])
	}
	pvs, err := client.ConfigV1alpha1().PackageVariants("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pvs.Items {
		out.Variants = append(out.Variants, &pvs.Items[i])
	}
	prs, err := client.PorchV1alpha1().PackageRevisions("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i := range prs.Items {
		pr := &prs.Items[i]
		key := pr.Namespace + "/" + pr.Name
		seen[key] = true
		rv, existed := before[key]
		action := ActionCreated
		switch {
		case existed && rv == pr.ResourceVersion:
			continue
		case existed:
			action = ActionChanged
		}
		files, err := sim.Resources(pr.Namespace, pr.Name)
		if err != nil {
			return nil, err
		}
		out.Revisions = append(out.Revisions, RevisionOutcome{PR: pr, Files: files, Action: action,
			NotRun: sim.SkippedFunctions(pr.Namespace, pr.Name)})
	}
	var gone []string
	for key := range before {
		if !seen[key] {
			gone = append(gone, key)
		}
	}
	sort.Strings(gone)
	for _, key := range gone {
		ns, name, _ := strings.Cut(key, "/")
		out.Revisions = append(out.Revisions, RevisionOutcome{
			PR:     &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
			Action: ActionDeleted,
		})
	}
	return out, nil
}

// NotReady lists, one line each, the sets and variants whose Ready
// condition is not True, with their conditions.
func (o *Outcome) NotReady() []string {
	var lines []string
	check := func(kind, ns, name string, conds []metav1.Condition) {
		if meta.IsStatusConditionTrue(conds, "Ready") {
			return
		}
		var parts []string
		for _, c := range conds {
			parts = append(parts, fmt.Sprintf("%s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message))
		}
		if len(parts) == 0 {
			parts = append(parts, "no conditions yet")
		}
		lines = append(lines, fmt.Sprintf("%s %s/%s is not Ready: %s", kind, ns, name, strings.Join(parts, "; ")))
	}
	for _, s := range o.Sets {
		check("PackageVariantSet", s.Namespace, s.Name, s.Status.Conditions)
	}
	for _, v := range o.Variants {
		check("PackageVariant", v.Namespace, v.Name, v.Status.Conditions)
	}
	return lines
}

// Rollouts says, one line each, where the rollout of each set with
// spec.rollout stands: its RolledOut condition. Offline nobody publishes,
// so a rollout shows its first step: the variants opened now, and the
// waves that wait.
func (o *Outcome) Rollouts() []string {
	var lines []string
	for _, s := range o.Sets {
		if c := meta.FindStatusCondition(s.Status.Conditions, rollout.ConditionRolledOut); c != nil {
			lines = append(lines, fmt.Sprintf("PackageVariantSet %s/%s: %s=%s (%s): %s", s.Namespace, s.Name, c.Type, c.Status, c.Reason, c.Message))
		}
	}
	return lines
}

// WriteYAML writes the sets, the variants and the created or changed
// package revisions with their PackageRevisionResources as one YAML stream
// in a stable order (by kind, namespace, name), without the fields that
// differ from run to run (uids, resourceVersions, timestamps). Deleted
// revisions are listed in a comment at the top.
func (o *Outcome) WriteYAML(w io.Writer) error {
	var docs []map[string]interface{}
	for _, r := range o.Revisions {
		if r.Action == ActionDeleted {
			if _, err := fmt.Fprintf(w, "# deleted: PackageRevision %s/%s\n", r.PR.Namespace, r.PR.Name); err != nil {
				return err
			}
		}
	}
	for _, s := range o.Sets {
		d, err := stableDoc(s, configv1alpha2.SchemeGroupVersion.String(), "PackageVariantSet")
		if err != nil {
			return err
		}
		docs = append(docs, d)
	}
	for _, v := range o.Variants {
		d, err := stableDoc(v, configv1alpha1.SchemeGroupVersion.String(), "PackageVariant")
		if err != nil {
			return err
		}
		docs = append(docs, d)
	}
	for _, r := range o.Revisions {
		if r.Action == ActionDeleted {
			continue
		}
		pr := r.PR
		if len(r.NotRun) > 0 {
			pr = pr.DeepCopy()
			if pr.Annotations == nil {
				pr.Annotations = map[string]string{}
			}
			pr.Annotations[NotRunAnnotation] = strings.Join(r.NotRun, ",")
		}
		d, err := stableDoc(pr, porchv1alpha1.SchemeGroupVersion.String(), "PackageRevision")
		if err != nil {
			return err
		}
		docs = append(docs, d)
		prr := &porchv1alpha1.PackageRevisionResources{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.PR.Namespace, Name: r.PR.Name},
			Spec: porchv1alpha1.PackageRevisionResourcesSpec{
				PackageName:    r.PR.Spec.PackageName,
				WorkspaceName:  r.PR.Spec.WorkspaceName,
				Revision:       r.PR.Spec.Revision,
				RepositoryName: r.PR.Spec.RepositoryName,
				Resources:      r.Files,
			},
		}
		if d, err = stableDoc(prr, porchv1alpha1.SchemeGroupVersion.String(), "PackageRevisionResources"); err != nil {
			return err
		}
		docs = append(docs, d)
	}
	for i, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// stableDoc turns an object into a map without run-specific fields.
func stableDoc(obj runtime.Object, apiVersion, kind string) (map[string]interface{}, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	m["apiVersion"], m["kind"] = apiVersion, kind
	if md, ok := m["metadata"].(map[string]interface{}); ok {
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"} {
			delete(md, f)
		}
		// A draft's id is made up at each create.
		if ann, ok := md["annotations"].(map[string]interface{}); ok {
			delete(ann, configv1alpha1.DraftIDAnnotation)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
		if refs, ok := md["ownerReferences"].([]interface{}); ok {
			for _, ref := range refs {
				if r, ok := ref.(map[string]interface{}); ok {
					delete(r, "uid")
				}
			}
		}
	}
	if st, ok := m["status"].(map[string]interface{}); ok {
		delete(st, "publishTimestamp")
		delete(st, "observedGeneration")
		// selfLock names the revision's commit, which is its
		// resourceVersion: not stable between runs.
		delete(st, "selfLock")
		if applied, ok := st["applied"].(map[string]interface{}); ok {
			delete(applied, "downstreamID")
		}
		if conds, ok := st["conditions"].([]interface{}); ok {
			for _, c := range conds {
				if cm, ok := c.(map[string]interface{}); ok {
					delete(cm, "lastTransitionTime")
					delete(cm, "observedGeneration")
				}
			}
		}
		if len(st) == 0 {
			delete(m, "status")
		}
	}
	return m, nil
}

// WriteDir writes the files of every Draft the run created or changed to
// dir/<repository>/<package>/<workspace>/ and prints a summary table of
// all created, changed and deleted revisions to w.
func (o *Outcome) WriteDir(dir string, w io.Writer) error {
	owners := map[string]*configv1alpha1.PackageVariant{}
	for _, v := range o.Variants {
		owners[string(v.UID)] = v
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// A column for the functions not run offline, when there are any.
	notRun := slices.ContainsFunc(o.Revisions, func(r RevisionOutcome) bool { return len(r.NotRun) > 0 })
	header := "REPOSITORY\tPACKAGE\tWORKSPACE\tLIFECYCLE\tACTION\tVARIANT\tVARIANT READY\tFILES"
	if notRun {
		header += "\tNOT RUN OFFLINE"
	}
	fmt.Fprintln(tw, header)
	for _, r := range o.Revisions {
		pr := r.PR
		if r.Action == ActionDeleted {
			fmt.Fprintf(tw, "%s\t\t\t\t%s\t\t\t\n", pr.Name, r.Action)
			continue
		}
		variant, ready := "-", "-"
		for _, ref := range pr.OwnerReferences {
			if v, ok := owners[string(ref.UID)]; ok && confighelper.IsVariantRef(ref) {
				variant = v.Name
				ready = string(metav1.ConditionUnknown)
				if c := meta.FindStatusCondition(v.Status.Conditions, "Ready"); c != nil {
					ready = string(c.Status)
				}
			}
		}
		where := "-"
		if pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft {
			target := DraftDir(dir, pr.Spec.RepositoryName, pr.Spec.PackageName, string(pr.Spec.WorkspaceName))
			if err := WritePackage(target, r.Files); err != nil {
				return err
			}
			where = target
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", pr.Spec.RepositoryName, pr.Spec.PackageName, pr.Spec.WorkspaceName,
			pr.Spec.Lifecycle, r.Action, variant, ready, where)
		if notRun {
			images := "-"
			if len(r.NotRun) > 0 {
				images = strings.Join(r.NotRun, ",")
			}
			line += "\t" + images
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// DraftDir is where a draft's files are written under dir:
// dir/<repository>/<package>/<workspace>.
func DraftDir(dir, repository, pkg, workspace string) string {
	return filepath.Join(dir, repository, filepath.FromSlash(pkg), workspace)
}

// WritePackage replaces target with the given files (paths relative to
// the package, "/"-separated); a path leaving target is an error.
func WritePackage(target string, files map[string]string) error {
	if err := os.RemoveAll(target); err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			return fmt.Errorf("file %q of a package would be written outside %s", p, target)
		}
		full := filepath.Join(target, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(files[p]), 0o644); err != nil {
			return err
		}
	}
	return nil
}

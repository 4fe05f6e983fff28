package input

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// DefaultNamespace is used when no input names a namespace.
const DefaultNamespace = "default"

// Namespace picks the namespace for objects that name none: explicit
// wins; else the one namespace the inputs use; else "default". Inputs in
// several namespaces need an explicit one only if some object names none.
func (in *Input) Namespace(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	used := map[string]bool{}
	unnamed := false
	in.eachNamespace(func(ns string) {
		if ns == "" {
			unnamed = true
		} else {
			used[ns] = true
		}
	})
	switch len(used) {
	case 0:
		return DefaultNamespace, nil
	case 1:
		for ns := range used {
			return ns, nil
		}
	}
	if !unnamed {
		return "", nil
	}
	names := make([]string, 0, len(used))
	for ns := range used {
		names = append(names, ns)
	}
	sort.Strings(names)
	return "", fmt.Errorf("the input uses several namespaces (%s) and some objects name none; give --namespace", strings.Join(names, ", "))
}

// Namespaces are the namespaces the input's objects are in, sorted;
// objects that name none are in fallback.
func (in *Input) Namespaces(fallback string) []string {
	seen := map[string]bool{}
	in.eachNamespace(func(ns string) {
		if ns == "" {
			ns = fallback
		}
		seen[ns] = true
	})
	out := make([]string, 0, len(seen))
	for ns := range seen {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// eachNamespace calls fn with the namespace of every object ("" for those
// that name none).
func (in *Input) eachNamespace(fn func(ns string)) {
	for _, o := range in.Repositories {
		fn(o.Obj.Namespace)
	}
	for _, o := range in.Variants {
		fn(o.Obj.Namespace)
	}
	for _, o := range in.Sets {
		fn(o.Obj.Namespace)
	}
	for _, r := range in.Revisions {
		fn(r.PR.Namespace)
	}
	for _, o := range in.Objects {
		fn(o.Obj.GetNamespace())
	}
}

// AddPackages adds the packages of --package flags as Published revisions
// in namespace ns, with a Repository for each repository the input lacks.
// The highest revision of each package gets the kpt.dev/latest-revision
// label, unless a revision given as a PackageRevision is higher.
func (in *Input) AddPackages(ns string, flags []PackageFlag) error {
	for _, f := range flags {
		files, err := ReadPackageDir(f.Dir)
		if err != nil {
			return fmt.Errorf("--package %s/%s=%s: %w", f.Repo, f.Package, f.Dir, err)
		}
		in.addPublished(ns, f.Repo, f.Package, f.Revision, files, Source{File: f.Dir})
	}
	in.labelLatest()
	return nil
}

// AddPublished adds revision of repo/pkg with the given files as a
// Published revision (and its Repository when the input has none), and
// labels the latest revisions of every package anew.
func (in *Input) AddPublished(ns, repo, pkg string, revision int, files map[string]string, src Source) {
	in.addPublished(ns, repo, pkg, revision, files, src)
	in.labelLatest()
}

// addPublished adds a Published revision made here (not from a snapshot),
// and its Repository when the input has none.
func (in *Input) addPublished(ns, repo, pkg string, revision int, files map[string]string, src Source) {
	ws := "v" + strconv.Itoa(revision)
	pr := &porchv1alpha1.PackageRevision{
		// No name: porchsim.Import derives it as Porch does.
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName:    pkg,
			RepositoryName: repo,
			WorkspaceName:  porchv1alpha1.WorkspaceName(ws),
			Revision:       revision,
			Lifecycle:      porchv1alpha1.PackageRevisionLifecyclePublished,
			Tasks:          []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{}}},
		},
	}
	in.Revisions = append(in.Revisions, &Revision{PR: pr, Files: files, Source: src, FromDir: true})
	if !in.hasRepository(ns, repo) {
		in.Repositories = append(in.Repositories, Sourced[*configv1alpha1.Repository]{&configv1alpha1.Repository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: repo},
			Spec: configv1alpha1.RepositorySpec{
				Type:    configv1alpha1.RepositoryTypeGit,
				Content: "Package",
				Git: &configv1alpha1.GitRepository{
					Repo:   fmt.Sprintf("https://git.example.com/%s/%s.git", ns, repo),
					Branch: "main",
				},
			},
		}, src})
	}
}

// labelLatest puts kpt.dev/latest-revision where Porch would
// (helper.Latest) on the revisions of each package made here; revisions
// from a snapshot keep the labels they have.
func (in *Input) labelLatest() {
	byPackage := map[string][]*porchv1alpha1.PackageRevision{}
	for _, r := range in.Revisions {
		key := helper.PackageKeyOf(r.PR)
		byPackage[key] = append(byPackage[key], r.PR)
	}
	for _, r := range in.Revisions {
		if !r.FromDir {
			continue
		}
		if helper.Latest(byPackage[helper.PackageKeyOf(r.PR)]) == r.PR {
			r.PR.Labels = map[string]string{porchv1alpha1.LatestPackageRevisionLabel: "true"}
		} else {
			delete(r.PR.Labels, porchv1alpha1.LatestPackageRevisionLabel)
		}
	}
}

func (in *Input) hasRepository(ns, name string) bool {
	for _, r := range in.Repositories {
		if r.Obj.Namespace == ns && r.Obj.Name == name {
			return true
		}
	}
	return false
}

// Load stores the input in sim as the cluster holds it: Repositories,
// PackageVariantSets and PackageVariants keep their identity (uid, owner
// references, labels such as a set's on its variants, finalizers, a
// deletion in progress, status), so a replayed fleet is the fleet: a set
// owns its variants and an up-to-date variant has nothing to do.
// Revisions are imported with their files, or with none when the input
// has a FileSource: the caller gives the Sim a file source first (Diff
// gives one that also keeps what it read for the comparison). Objects with no
// namespace are put in ns. It returns every problem found.
func (in *Input) Load(ctx context.Context, sim *porchsim.Sim, ns string) error {
	var errs Errors
	fail := func(src Source, obj string, err error) {
		errs = append(errs, &Error{Source: src, Object: obj, Msg: err.Error()})
	}
	defaultNS := func(m *metav1.ObjectMeta) {
		if m.Namespace == "" {
			m.Namespace = ns
		}
	}
	restore := func(src Source, kind string, obj runtime.Object, m *metav1.ObjectMeta) {
		defaultNS(m)
		m.ResourceVersion = ""
		if _, err := sim.Restore(obj); err != nil {
			fail(src, kind+" "+m.Namespace+"/"+m.Name, err)
		}
	}
	for _, o := range in.Repositories {
		repo := o.Obj.DeepCopy()
		restore(o.Source, "Repository", repo, &repo.ObjectMeta)
	}
	for _, o := range in.Sets {
		set := o.Obj.DeepCopy()
		restore(o.Source, "PackageVariantSet", set, &set.ObjectMeta)
	}
	for _, o := range in.Variants {
		pv := o.Obj.DeepCopy()
		restore(o.Source, "PackageVariant", pv, &pv.ObjectMeta)
	}
	for _, r := range in.Revisions {
		pr := r.PR.DeepCopy()
		defaultNS(&pr.ObjectMeta)
		if _, err := sim.Import(pr, r.Files); err != nil {
			fail(r.Source, "", err)
		}
	}
	for i, o := range in.Objects {
		if o.Obj.GetNamespace() == "" {
			u := o.Obj.DeepCopy()
			u.SetNamespace(ns)
			in.Objects[i].Obj = u
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// ObjectList returns the in-cluster objects for Options.Objects.
func (in *Input) ObjectList() []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(in.Objects))
	for i, o := range in.Objects {
		out[i] = o.Obj
	}
	return out
}

// AddStandInUpstreams gives every set whose upstream package is not in the
// input a stand-in Published revision (the revision the set pins, else 1,
// holding only a Kptfile), so sets can be expanded without their packages.
// It returns a note for each stand-in.
func (in *Input) AddStandInUpstreams(ns string) []string {
	var notes []string
	for _, s := range in.Sets {
		up := s.Obj.Spec.Upstream
		if up == nil || up.Repo == "" || up.Package == "" {
			continue // validation reports it
		}
		setNS := s.Obj.Namespace
		if setNS == "" {
			setNS = ns
		}
		if in.hasPackage(setNS, up.Repo, up.Package) {
			continue
		}
		rev := up.Revision
		if rev < 1 {
			rev = 1
		}
		name := up.Package
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		files := map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"}
		in.addPublished(setNS, up.Repo, up.Package, rev, files, Source{File: "stand-in for " + up.Repo + "/" + up.Package})
		notes = append(notes, fmt.Sprintf("no revision of upstream package %s/%s in namespace %s is given; using a stand-in revision %d", up.Repo, up.Package, setNS, rev))
	}
	in.labelLatest()
	return notes
}

func (in *Input) hasPackage(ns, repo, pkg string) bool {
	for _, r := range in.Revisions {
		if r.PR.Namespace == ns && r.PR.Spec.RepositoryName == repo && r.PR.Spec.PackageName == pkg {
			return true
		}
	}
	return false
}

package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// defaultNamespace is the namespace of a Repository that names none.
const defaultNamespace = "default"

var repositoryGV = configv1alpha1.SchemeGroupVersion.String()

// readRepositories reads the Repositories of a YAML or JSON file: any number
// of documents, each a Repository or a List of them. Anything else is an
// error, so that a typo in a kind does not silently drop a Repository.
func readRepositories(path string) ([]*configv1alpha1.Repository, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--repositories-from: %w", err)
	}
	var repos []*configv1alpha1.Repository
	err = input.EachDocument(data, func(raw map[string]any) error {
		got, err := repositoriesOf(raw)
		if err != nil {
			return err
		}
		repos = append(repos, got...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return repos, nil
}

// repositoriesOf returns the Repositories of one document.
func repositoriesOf(raw map[string]any) ([]*configv1alpha1.Repository, error) {
	data, err := sigsyaml.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := sigsyaml.Unmarshal(data, &tm); err != nil {
		return nil, err
	}
	switch {
	case tm.APIVersion == repositoryGV && tm.Kind == "Repository":
		var r configv1alpha1.Repository
		if err := sigsyaml.UnmarshalStrict(data, &r); err != nil {
			return nil, fmt.Errorf("Repository: %w", err)
		}
		if r.Name == "" {
			return nil, errors.New("Repository without metadata.name")
		}
		if r.Namespace == "" {
			r.Namespace = defaultNamespace
		}
		return []*configv1alpha1.Repository{&r}, nil
	case strings.HasSuffix(tm.Kind, "List"):
		var l struct {
			Items []map[string]any `json:"items"`
		}
		if err := sigsyaml.Unmarshal(data, &l); err != nil {
			return nil, fmt.Errorf("%s: %w", tm.Kind, err)
		}
		var out []*configv1alpha1.Repository
		for i, item := range l.Items {
			got, err := repositoriesOf(item)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i+1, err)
			}
			out = append(out, got...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s %s is not a %s Repository", tm.APIVersion, tm.Kind, repositoryGV)
}

// addPackages stores each package directory as a Published revision, the
// revisions of a package in order. The Repository must be in the Sim.
func addPackages(sim *porchsim.Sim, namespace string, flags []input.PackageFlag) error {
	flags = slices.Clone(flags)
	slices.SortStableFunc(flags, func(a, b input.PackageFlag) int {
		if c := strings.Compare(a.Repo, b.Repo); c != 0 {
			return c
		}
		if c := strings.Compare(a.Package, b.Package); c != 0 {
			return c
		}
		return a.Revision - b.Revision
	})
	for _, f := range flags {
		which := fmt.Sprintf("--package %s/%s@%d=%s", f.Repo, f.Package, f.Revision, f.Dir)
		files, err := input.ReadPackageDir(f.Dir)
		if err != nil {
			return fmt.Errorf("%s: %w", which, err)
		}
		if _, err := sim.AddPublished(namespace, f.Repo, f.Package, f.Revision, files); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%s: no Repository %s in namespace %s (create it in the cluster, or list it in --repositories-from)",
					which, f.Repo, namespace)
			}
			return fmt.Errorf("%s: %w", which, err)
		}
	}
	return nil
}

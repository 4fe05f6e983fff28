package porchsim

import (
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/merge3"
)

// mergeSourceAnnotation is how kyaml's Merge3 filter tells the three inputs
// apart.
const mergeSourceAnnotation = "config.kubernetes.io/merge-source"

// mergePackages is kpt's resource-merge of a local package with an upstream
// change, from the old upstream (original) to the new one (updated):
//   - resources (*.yaml, *.yml) are three-way merged by kyaml's Merge3,
//     matched by group, version, kind, namespace, name and file, exactly as
//     `kpt pkg update` does: a local edit survives, an upstream change is
//     taken, a resource added on either side is kept, a resource deleted
//     upstream is deleted;
//   - Kptfiles are three-way merged field by field after giving the upstream
//     ones the local package name (the caller then records the new upstream);
//   - any other file is taken from the new upstream when the local copy is
//     the old upstream's, and kept as it is otherwise.
func mergePackages(original, updated, local map[string]string) (map[string]string, error) {
	out, err := mergeResources(original, updated, local)
	if err != nil {
		return nil, err
	}
	for _, p := range unionPaths(original, updated, local) {
		o, u, l := lookupFile(original, p), lookupFile(updated, p), lookupFile(local, p)
		switch {
		case isKRMFile(p):
			continue
		case path.Base(p) == kptfileName:
			merged, keep, err := mergeKptfile(o, u, l)
			if err != nil {
				return nil, fmt.Errorf("merge %s: %w", p, err)
			}
			if keep {
				out[p] = merged
			}
		default:
			if merged, keep := mergeFile(o, u, l); keep {
				out[p] = merged
			}
		}
	}
	return out, nil
}

// mergeResources runs kyaml's Merge3 over the resource files, as kpt does,
// in an in-memory file system.
func mergeResources(original, updated, local map[string]string) (map[string]string, error) {
	fs := filesys.MakeFsInMemory()
	for dir, files := range map[string]map[string]string{"/original": original, "/updated": updated, "/dest": local} {
		if err := fs.MkdirAll(dir); err != nil {
			return nil, err
		}
		for p, content := range files {
			if !isKRMFile(p) {
				continue
			}
			full := path.Join(dir, p)
			if err := fs.MkdirAll(path.Dir(full)); err != nil {
				return nil, err
			}
			if err := fs.WriteFile(full, []byte(content)); err != nil {
				return nil, err
			}
		}
	}
	onFS := filesys.FileSystemOrOnDisk{FileSystem: fs}
	glob := []string{"*.yaml", "*.yml"}
	reader := func(dir, source string) kio.LocalPackageReader {
		return kio.LocalPackageReader{
			PackagePath:       dir,
			MatchFilesGlob:    glob,
			PreserveSeqIndent: true,
			SetAnnotations:    map[string]string{mergeSourceAnnotation: source},
			FileSystem:        onFS,
		}
	}
	dest := &kio.LocalPackageReadWriter{
		PackagePath:       "/dest",
		MatchFilesGlob:    glob,
		PreserveSeqIndent: true,
		SetAnnotations:    map[string]string{mergeSourceAnnotation: "dest"},
		FileSystem:        onFS,
	}
	err := kio.Pipeline{
		Inputs:  []kio.Reader{dest, reader("/original", "original"), reader("/updated", "updated")},
		Filters: []kio.Filter{filters.Merge3{Matcher: &filters.DefaultGVKNNMatcher{MergeOnPath: true}}},
		Outputs: []kio.Writer{dest},
	}.Execute()
	if err != nil {
		return nil, fmt.Errorf("three-way merge of resources: %w", err)
	}
	out := map[string]string{}
	err = fs.Walk("/dest", func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(p, "/dest/")
		if !isKRMFile(rel) {
			return nil
		}
		data, err := fs.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = string(data)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mergeKptfile three-way merges a Kptfile. The upstream versions carry the
// upstream package's name; they are given the local name first so that the
// local name wins, as kpt's Kptfile update does.
func mergeKptfile(original, updated, local *string) (string, bool, error) {
	if local == nil || updated == nil {
		merged, keep := mergeFile(original, updated, local)
		return merged, keep, nil
	}
	dest, err := yaml.Parse(*local)
	if err != nil {
		return "", false, err
	}
	name := dest.GetName()
	orig := yaml.NewMapRNode(nil)
	if original != nil {
		if orig, err = yaml.Parse(*original); err != nil {
			return "", false, err
		}
	}
	upd, err := yaml.Parse(*updated)
	if err != nil {
		return "", false, err
	}
	for _, n := range []*yaml.RNode{orig, upd} {
		if n.GetName() != "" {
			if err := setName(n, name); err != nil {
				return "", false, err
			}
		}
	}
	merged, err := merge3.Merge(dest, orig, upd)
	if err != nil {
		return "", false, err
	}
	s, err := merged.String()
	return s, true, err
}

// mergeFile merges a file kpt does not read as resources: the local copy
// wins unless it is unchanged from the old upstream.
func mergeFile(original, updated, local *string) (string, bool) {
	switch {
	case local == nil:
		if original == nil && updated != nil {
			return *updated, true // added upstream
		}
		return "", false // deleted locally, or nowhere
	case original != nil && *local == *original:
		if updated == nil {
			return "", false // deleted upstream
		}
		return *updated, true
	}
	return *local, true
}

func lookupFile(files map[string]string, p string) *string {
	if v, ok := files[p]; ok {
		return &v
	}
	return nil
}

func unionPaths(fileSets ...map[string]string) []string {
	seen := map[string]bool{}
	var paths []string
	for _, files := range fileSets {
		for p := range files {
			if !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	sort.Strings(paths)
	return paths
}

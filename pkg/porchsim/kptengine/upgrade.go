package kptengine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	kptapi "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	"github.com/kptdev/kpt/pkg/lib/kptops"
	"github.com/kptdev/kpt/pkg/lib/update"
	"github.com/kptdev/kpt/pkg/lib/update/updatetypes"
)

// resourceMerge is the upgrade strategy Porch's upgrade task uses unless
// told otherwise, and the only one the controllers ask for.
const resourceMerge = "resource-merge"

// mergeMu serialises kpt's three-way merges: each one loads the CRD schemas
// of the packages into kyaml's process-wide OpenAPI schema.
var mergeMu sync.Mutex

// Upgrade is Porch's upgrade task with the resource-merge strategy: the
// change from original (the old upstream revision) to updated (the new
// one) is merged into local (the downstream revision) by kpt's three-way
// merge, which matches resources by their upstream identity (the kpt-merge
// comment Clone wrote), not by their current namespace and name, so a
// resource the downstream moved to another namespace still merges with its
// upstream. Then the Kptfile's upstream and upstreamLock are set to newLock
// and the merge keys of new resources are added.
//
// As in Porch the merge runs in temporary directories on disk, the file
// system kpt's updater works on.
//
// The Kptfiles' status.renderStatus is left out of the merge (kpt beta.61
// cannot read it); the render Porch runs after every upgrade writes a new
// one.
func Upgrade(original, updated, local map[string]string, newLock GitLock) (files map[string]string, err error) {
	defer recoverPanic(&err, "upgrade package")
	schemaReady()
	for name, pkg := range map[string]map[string]string{"old upstream": original, "new upstream": updated, "local": local} {
		if err := checkPaths(pkg); err != nil {
			return nil, fmt.Errorf("upgrade package: %s: %w", name, err)
		}
	}
	original, _ = stripRenderStatuses(original)
	updated, _ = stripRenderStatuses(updated)
	local, _ = stripRenderStatuses(local)

	merged, err := mergeResources(original, updated, local)
	if err != nil {
		return nil, fmt.Errorf("upgrade package: %w", err)
	}
	up, lock := newLock.upstream()
	if err := kptops.UpdateKptfileUpstream("", merged, up, lock); err != nil {
		return nil, fmt.Errorf("upgrade package: %w", err)
	}
	if merged, err = ensureMergeKeys(merged); err != nil {
		return nil, fmt.Errorf("upgrade package: %w", err)
	}
	return merged, nil
}

// mergeResources runs kpt's resource-merge updater as Porch's package
// updater does and returns the merged local package.
func mergeResources(original, updated, local map[string]string) (map[string]string, error) {
	root, err := os.MkdirTemp("", "kptengine-upgrade-*")
	if err != nil {
		return nil, fmt.Errorf("create merge directory: %w", err)
	}
	defer os.RemoveAll(root)

	dirs := map[string]map[string]string{"local": local, "original": original, "updated": updated}
	for name, pkg := range dirs {
		if err := writeDir(filepath.Join(root, name), pkg); err != nil {
			return nil, err
		}
	}

	mergeMu.Lock()
	err = update.GetUpdater(resourceMerge).Update(updatetypes.Options{
		RelPackagePath: ".",
		LocalPath:      filepath.Join(root, "local"),
		OriginPath:     filepath.Join(root, "original"),
		UpdatedPath:    filepath.Join(root, "updated"),
		IsRoot:         true,
	})
	mergeMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("merge upstream changes: %w", err)
	}
	return readDir(filepath.Join(root, "local"))
}

// writeDir writes a package's files under dir.
func writeDir(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create merge directory: %w", err)
	}
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o750); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// readDir reads every file under dir back into a package.
func readDir(dir string) (map[string]string, error) {
	files, err := readFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("read merged package: %w", err)
	}
	if _, ok := files[kptapi.KptFileName]; !ok {
		return nil, fmt.Errorf("merged package has no Kptfile")
	}
	return files, nil
}

// readFiles reads every file under dir, keyed by its slash-separated path
// relative to dir.
func readFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return files, err
}

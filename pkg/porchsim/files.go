package porchsim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

// Lazy package files. Porch serves each PackageRevisionResources from git;
// a Sim replaying a live fleet (Import) should not copy every package of the
// fleet up front, only those the controllers actually read. A revision
// imported without files is lazy: its files come from the file source the
// first time something needs them, and are kept from then on.
//
// Every read of an entry's files goes through filesLocked; only stores of
// new files (setFilesLocked, the placeholder's sync) write revisionFiles.files
// directly, and they clear revisionFiles.lazy. (An update of a revision
// writes back the files it read through filesLocked, or the entry's own
// untouched: nil for a revision still lazy.)

// revisionFiles is what porch keeps with a stored PackageRevision (its
// store.Entry's Data): its package files.
type revisionFiles struct {
	// files are the package files. Read them through filesLocked: they
	// are nil while lazy.
	files map[string]string
	// lazy marks a revision imported without its files: they are fetched
	// from the file source on first need (see SetFileSource). Storing
	// files clears it.
	lazy bool
	// fetchErr is the failure of the one fetch of a lazy revision; every
	// later need fails with it (see filesLocked).
	fetchErr error
	// skipped are the pipeline functions the last render of the files
	// did not run (not built into Porch, and the Sim runs none other).
	skipped []string
}

// filesOf is the files record of a revision's entry (an empty one for a
// revision stored without).
func filesOf(e *store.Entry) *revisionFiles {
	f, ok := e.Data.(*revisionFiles)
	if !ok {
		f = &revisionFiles{}
		e.Data = f
	}
	return f
}

// insertRevisionLocked stores a new PackageRevision with its files.
func (p *porch) insertRevisionLocked(pr *porchv1alpha1.PackageRevision, files map[string]string) *store.Entry {
	return p.InsertLocked(resPackageRevisions, pr, &revisionFiles{files: files})
}

// SetFileSource sets where the files of revisions imported without files
// (Import with nil files) come from: fetch returns the files of the revision
// namespace/name, as the matching PackageRevisionResources holds them. With
// a source set, Import accepts nil files; the revision's files are fetched
// on first need (a get or list of its packagerevisionresources, a clone,
// edit or upgrade from it, publishing it, an update that renders it,
// Resources, AddPlaceholder), exactly once, and kept. Reads of the
// PackageRevision itself and updates of a published revision's metadata
// fetch nothing. A list of packagerevisionresources carries the files of
// every revision it returns, so it fetches each lazy one it selects (after
// applying its selectors): an unfiltered list fetches the whole namespace.
//
// fetch is called with the Sim's lock held: simple, and the Sim serves no
// other request meanwhile, which is fine for a tool that replays a fleet
// (the fetch is the slow part anyway). So fetch must not call back into the
// Sim (it would deadlock). Its context is context.Background(): the fake
// clientset does not hand the request's context to the Sim, so fetch bounds
// its own work (a timeout of its own, say).
//
// A failed fetch fails the request that needed the files with an internal
// error (500) naming the revision and the cause, and every later request
// that needs them with the same error: the fetch is not retried, so a
// failing cluster is not hammered by controllers' retries and a run stays
// deterministic. The failures are listed by FileSourceErrors, so that a
// caller can refuse results built on missing files. nil removes the source
// (lazy revisions then fail when needed).
func (s *Sim) SetFileSource(fetch func(ctx context.Context, namespace, name string) (map[string]string, error)) {
	p := s.porch
	p.Lock()
	defer p.Unlock()
	p.fileSource = fetch
}

// FileSourceErrors lists the failed fetches of the file source, one per
// revision (its first and only fetch), ordered by namespace/name. Each names
// the revision and wraps the cause. A run with any of them read no files
// of those revisions: its outcome does not reflect them.
func (s *Sim) FileSourceErrors() []error {
	s.store.Lock()
	defer s.store.Unlock()
	return sortedByKey(s.porch.fileErrors, func(_ store.Key, err error) error { return err })
}

// Fetched lists the revisions ("namespace/name", sorted) whose files the
// file source returned: what the Sim read from the source, for request
// accounting. A revision deleted since stays listed.
func (s *Sim) Fetched() []string {
	s.store.Lock()
	defer s.store.Unlock()
	return sortedByKey(s.porch.fetched, func(k store.Key, _ struct{}) string { return k.Namespace + "/" + k.Name })
}

// sortedByKey lists f of each entry of m, ordered by namespace/name.
func sortedByKey[V, T any](m map[store.Key]V, f func(store.Key, V) T) []T {
	keys := slices.SortedFunc(maps.Keys(m), store.CompareKeys)
	out := make([]T, 0, len(keys))
	for _, k := range keys {
		out = append(out, f(k, m[k]))
	}
	return out
}

// filesLocked returns the files of a stored revision (shared: do not
// modify), fetching them from the file source if the revision is lazy and
// they were not fetched yet. The error is an internal error (500) for the
// request that needed the files.
func (p *porch) filesLocked(e *store.Entry) (map[string]string, error) {
	f := filesOf(e)
	if !f.lazy {
		return f.files, nil
	}
	if f.fetchErr != nil {
		return nil, apierrors.NewInternalError(f.fetchErr)
	}
	pr := e.Object().(*porchv1alpha1.PackageRevision)
	key := store.Key{Namespace: pr.Namespace, Name: pr.Name}
	files, err := p.fetchLocked(pr.Namespace, pr.Name)
	if err != nil {
		err = fmt.Errorf("files of package revision %s/%s could not be fetched: %w", pr.Namespace, pr.Name, err)
		f.fetchErr = err
		if _, ok := p.fileErrors[key]; !ok {
			p.fileErrors[key] = err
		}
		return nil, apierrors.NewInternalError(err)
	}
	f.files, f.lazy = files, false
	p.fetched[key] = struct{}{}
	return f.files, nil
}

// fetchLocked calls the file source and checks what it returned as Import
// checks files given to it.
func (p *porch) fetchLocked(namespace, name string) (map[string]string, error) {
	if p.fileSource == nil {
		return nil, errors.New("no file source is set (SetFileSource)")
	}
	files, err := p.fileSource(context.Background(), namespace, name)
	if err != nil {
		return nil, err
	}
	if err := checkFiles(files); err != nil {
		return nil, fmt.Errorf("the file source returned %w", err)
	}
	// A copy: the source's map is the caller's, and stored files are
	// never modified in place.
	return copyFiles(files), nil
}

// checkFiles checks the files of a package revision: at least one (a
// Kptfile), every path relative and inside the package.
func checkFiles(files map[string]string) error {
	if len(files) == 0 {
		return errors.New("no files: a package revision has at least a Kptfile")
	}
	for _, path := range slices.Sorted(maps.Keys(files)) {
		if path == "" || strings.HasPrefix(path, "/") || strings.Contains(path, "..") {
			return fmt.Errorf("file path %q must be relative and stay inside the package", path)
		}
	}
	return nil
}

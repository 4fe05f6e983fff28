package kptengine

import (
	"errors"
	"fmt"

	kptapi "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	"github.com/kptdev/kpt/pkg/lib/kptops"
	"github.com/kptdev/kpt/pkg/lib/util/addmergecomment"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

// GitLock is where a package revision lives in git, as Porch records an
// upstream in a Kptfile's upstream and upstreamLock and in a
// PackageRevision's status.upstreamLock.
type GitLock struct {
	// Repo is the repository URL; Porch records it ending in ".git" and
	// so do Clone and Upgrade, whether or not it is given that way.
	Repo string
	// Directory is the package's directory in the repository.
	Directory string
	// Ref is the git ref of the revision, e.g. "app/v1" for revision 1 of
	// package app, "drafts/app/v1" for an unpublished one.
	Ref string
	// Commit is the commit the ref pointed to.
	Commit string
}

// upstream is the lock as a Kptfile's upstream and upstreamLock. No update
// strategy is written: Porch writes none.
func (l GitLock) upstream() (kptapi.Upstream, kptapi.UpstreamLock) {
	return kptapi.Upstream{
			Type: kptapi.GitOrigin,
			Git:  &kptapi.Git{Repo: l.Repo, Directory: l.Directory, Ref: l.Ref},
		}, kptapi.UpstreamLock{
			Type: kptapi.GitOrigin,
			Git:  &kptapi.GitLock{Repo: l.Repo, Directory: l.Directory, Ref: l.Ref, Commit: l.Commit},
		}
}

// CloneOptions describe the package a clone creates.
type CloneOptions struct {
	// PackagePath is the new package's spec.packageName, e.g. "app-east"
	// or "apps/east". Porch writes it whole, not only its last segment, as
	// the Kptfile's metadata.name and as the package context's name and
	// package-path (Porch's clone task passes spec.packageName to kpt for
	// both).
	PackagePath string
	// Deployment is set when the package is cloned into a deployment
	// repository: Porch then generates its package context.
	Deployment bool
	// Lock is the upstream revision the package is cloned from.
	Lock GitLock
}

// Clone makes the files of a new package cloned from upstream files, as
// Porch's clone task does, before the render that follows every create:
//   - the Kptfile gets metadata.name, upstream and upstreamLock (git, the
//     repository URL ending in ".git", directory, ref, commit), re-marshalled;
//   - into a deployment repository, every package context ConfigMap is
//     replaced by package-context.yaml with data.name and data.package-path;
//     otherwise a package-context.yaml is copied as it is;
//   - every resource and the Kptfile get a "# kpt-merge: <namespace>/<name>"
//     comment on their metadata line and an
//     internal.kpt.dev/upstream-identifier annotation, the identity the
//     upgrade's three-way merge later matches resources by.
//
// Unlike Porch, which then stores an empty package, a resource file that
// does not parse is an error.
func Clone(upstream map[string]string, opts CloneOptions) (files map[string]string, err error) {
	defer recoverPanic(&err, "clone package")
	schemaReady()
	if opts.PackagePath == "" {
		return nil, errors.New("clone package: no package path")
	}
	if err := checkPaths(upstream); err != nil {
		return nil, fmt.Errorf("clone package %q: %w", opts.PackagePath, err)
	}
	files = copyFiles(upstream)
	kptfile, ok := files[kptapi.KptFileName]
	if !ok {
		return nil, fmt.Errorf("clone package %q: upstream package has no Kptfile", opts.PackagePath)
	}
	// kpt beta.62.1 keeps the upstream's render status through the
	// rewrite; beta.61 cannot read it, so it is set aside meanwhile.
	stripped, rs := withoutRenderStatus(kptfile)
	files[kptapi.KptFileName] = stripped
	up, lock := opts.Lock.upstream()
	if err := kptops.UpdateKptfileUpstream(opts.PackagePath, files, up, lock); err != nil {
		return nil, fmt.Errorf("clone package %q: %w", opts.PackagePath, err)
	}
	if files[kptapi.KptFileName], err = withRenderStatus(files[kptapi.KptFileName], rs); err != nil {
		return nil, fmt.Errorf("clone package %q: %w", opts.PackagePath, err)
	}

	if opts.Deployment {
		if files, err = generatePackageContext(files, opts.PackagePath); err != nil {
			return nil, fmt.Errorf("clone package %q: %w", opts.PackagePath, err)
		}
	}
	if files, err = ensureMergeKeys(files); err != nil {
		return nil, fmt.Errorf("clone package %q: %w", opts.PackagePath, err)
	}
	return files, nil
}

// ensureMergeKeys gives every resource (and Kptfile) that has none its
// kpt-merge comment, and every one its upstream-identifier annotation, as
// Porch does after a clone and after an upgrade.
func ensureMergeKeys(files map[string]string) (map[string]string, error) {
	out, err := filterPackage(files, kio.FilterAll(&addmergecomment.AddMergeComment{}))
	if err != nil {
		return nil, fmt.Errorf("add merge keys: %w", err)
	}
	return out, nil
}

package packagevariantset

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/config/validation"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// Every sync of a set takes the same path: it expands and renders the
// targets, reads the set's variants from the cache and plans the write of
// each. No event handler keeps a record of what changed for the sync to go
// on from; what the syncs keep are memos that check themselves against
// what they were made from, so a change nobody reported is never missed:
// a target's render against the set's generation, the upstream revision
// and the resourceVersions the render read (below), the comparison of a
// rendered spec with a variant's against the variant's UID and generation,
// and where a variant stands with its change (rollout.go) against its
// resourceVersion.

// states holds what each set's syncs keep, by set UID.
type states struct {
	mu   sync.Mutex
	sets map[types.UID]*setState
}

// setState is what the syncs of one set generation against one upstream
// revision keep: the renders of its targets. Only the set's own sync uses
// it (the queue syncs a set on one worker at a time).
type setState struct {
	generation int64
	upstream   string
	targets    map[targetKey]*rendered
	// sweep numbers the syncs; a render not used by the last one is
	// dropped.
	sweep uint64
}

// upstreamKey identifies the upstream revision a set was rendered against.
func upstreamKey(upstream *porchv1alpha1.PackageRevision) string {
	return upstream.Name + "@" + upstream.ResourceVersion
}

// of returns the state of a set, empty when its generation or upstream
// revision differs from what it was kept for.
func (s *states) of(pvs *configv1alpha2.PackageVariantSet, upstream *porchv1alpha1.PackageRevision) *setState {
	s.mu.Lock()
	defer s.mu.Unlock()
	up := upstreamKey(upstream)
	st := s.sets[pvs.UID]
	if st == nil || st.generation != pvs.Generation || st.upstream != up {
		st = &setState{generation: pvs.Generation, upstream: up, targets: map[targetKey]*rendered{}}
		if s.sets == nil {
			s.sets = map[types.UID]*setState{}
		}
		s.sets[pvs.UID] = st
	}
	return st
}

// forget drops a set's state: the set is gone.
func (s *states) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sets, uid)
}

// A set keeps what each of its targets rendered from one sync to the next,
// so that a sync renders only the targets whose inputs changed: a set of
// 10,000 variants woken by one variant's readiness does not evaluate
// 30,000 expressions again. A target's render depends on the set's spec
// (its generation), the upstream revision (its name and resourceVersion),
// the target's own object (its resourceVersion) and the downstream
// Repository the render loaded (its resourceVersion); a change of any of
// them renders it again. The CEL budget bounds what one sync evaluates, so
// a target taken from here costs nothing; a sync stopped by the budget
// keeps nothing, so that the next one renders the whole set again and
// stops again.

// targetKey identifies a target across syncs.
type targetKey struct {
	index     int
	repo, pkg string
}

func keyOf(t target) targetKey {
	return targetKey{index: t.index, repo: t.repoDefault, pkg: t.packageDefault}
}

// rendered is what one target rendered, and what the render read. It is
// not changed once made, except for the memo of the last comparison.
type rendered struct {
	// objectVersion is the resourceVersion of the target's object; the
	// downstream Repository the render loaded is repo at repoVersion ("":
	// none was loaded, or there was none of that name).
	objectVersion, repo, repoVersion string

	spec *configv1alpha1.PackageVariantSpec
	// err is why the target has no spec; invalid, why its spec may not be
	// written.
	err     error
	invalid string
	// id and name identify the variant of the spec.
	id, name string

	// used is the sweep of the last sync that used it.
	used uint64

	// What the syncs worked out from the render, kept for the next ones:
	// the last comparison of spec with the variant's (equal), for the
	// variant's UID and generation (a change of its spec changes its
	// generation); where the variant stands with its change, for its UID
	// and resourceVersion; and the index of its wave in spec.rollout.waves,
	// for the resourceVersion of its downstream Repository.
	comparedUID     types.UID
	comparedGen     int64
	equal           bool
	progressUID     types.UID
	progressRV      string
	progress        progress
	wave            int
	waveKnown       bool
	waveRepoVersion string
	// health is what the syncs keep of the variant's health check (nil
	// until one is made).
	health *healthMemo
}

// specOf says whether pv's spec is the rendered one, comparing only when
// pv's spec changed since the last comparison.
func (e *rendered) specOf(pv *configv1alpha1.PackageVariant) bool {
	if e.comparedUID == "" || e.comparedUID != pv.UID || e.comparedGen != pv.Generation {
		e.comparedUID, e.comparedGen, e.equal = pv.UID, pv.Generation, specEqual(&pv.Spec, e.spec)
	}
	return e.equal
}

// render returns what target t renders: the earlier sync's render when
// nothing it read has changed, else a new one. stopped is an error that
// stops the rendering of every target (stopsRendering).
func (s *setState) render(r *renderer, t target) (e *rendered, stopped error) {
	key := keyOf(t)
	if e := s.targets[key]; e != nil && e.objectVersion == t.version && e.repoVersion == r.repositoryVersion(e.repo) {
		e.used = s.sweep
		return e, nil
	}
	e = &rendered{objectVersion: t.version, used: s.sweep}
	r.loaded = ""
	e.spec, e.err = r.render(t)
	if stop := stopsRendering(e.err); stop != nil {
		return nil, stop
	}
	e.repo = r.loaded
	e.repoVersion = r.repositoryVersion(e.repo)
	if e.err == nil {
		e.id = variantIdentifier(r.pvs.Name, e.spec.Downstream.Repo, e.spec.Downstream.Package)
		e.name = variantName(e.id)
		// Created, it would only be a Stalled variant; an existing one
		// keeps the spec it has.
		if errs := validation.ValidatePackageVariantSpec(e.spec, field.NewPath("spec")); len(errs) > 0 {
			e.invalid = fmt.Sprintf("%s renders PackageVariant %s (for downstream %s/%s) with an invalid spec, so it is not created or updated: %s",
				confighelper.TargetPath(t.index), e.name, e.spec.Downstream.Repo, e.spec.Downstream.Package, strings.Join(validation.Messages(errs), "; "))
		}
	}
	s.targets[key] = e
	return e, nil
}

// specEqual compares specs, taking nil and empty maps and lists as equal,
// and a package context with no data and no keys to remove as none. It
// runs for every variant on every sync of a set, so it copies nothing.
func specEqual(a, b *configv1alpha1.PackageVariantSpec) bool {
	// Semantic.DeepEqual already takes nil and empty maps and lists as
	// equal; only the empty package context needs help.
	return equality.Semantic.DeepEqual(withoutEmptyContext(a), withoutEmptyContext(b))
}

// withoutEmptyContext returns s, or, when its package context is empty, a
// shallow copy of s without it (shared with s, so only for reading).
func withoutEmptyContext(s *configv1alpha1.PackageVariantSpec) *configv1alpha1.PackageVariantSpec {
	if pc := s.PackageContext; pc == nil || len(pc.Data) > 0 || len(pc.RemoveKeys) > 0 {
		return s
	}
	out := *s
	out.PackageContext = nil
	return &out
}

// desiredVariants renders every target into the spec of its variant,
// rendering again only the targets whose inputs changed since s's last
// sync, and keeps in s the renders of this sync's targets only. A target
// that cannot be rendered, renders a spec the PackageVariant controller
// would refuse, or renders the downstream of an earlier target is a
// problem for the set's condition. renderFailed says that a target has no
// valid spec: an existing variant may be that target's, so none may be
// taken for stale.
//
// stopped is an error that stops the rendering of every target: the sync's
// CEL budget spent (*celtemplate.BudgetError), or its context ended. Then
// s keeps no render at all.
func desiredVariants(s *setState, r *renderer, targets []target) (wants []*rendered, problems []string, renderFailed bool, stopped error) {
	s.sweep++
	firstTarget := make(map[string]int, len(targets))
	for _, t := range targets {
		e, stop := s.render(r, t)
		if stop != nil {
			clear(s.targets)
			return nil, nil, false, stop
		}
		switch {
		case e.err != nil:
			renderFailed = true
			problems = append(problems, e.err.Error())
			continue
		case e.invalid != "":
			renderFailed = true
			problems = append(problems, e.invalid)
			continue
		}
		if first, dup := firstTarget[e.id]; dup {
			problems = append(problems, fmt.Sprintf("%s and %s both render downstream %s/%s; only the first is used: give each a different downstream",
				confighelper.TargetPath(first), confighelper.TargetPath(t.index), e.spec.Downstream.Repo, e.spec.Downstream.Package))
			continue
		}
		firstTarget[e.id] = t.index
		wants = append(wants, e)
	}
	for k, e := range s.targets {
		if e.used != s.sweep {
			delete(s.targets, k)
		}
	}
	return wants, problems, renderFailed, nil
}

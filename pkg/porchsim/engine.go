package porchsim

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
	"github.com/porch-variants/variant-controller/pkg/porchsim/kptengine"
)

// engine makes package content the way Porch's engine does: clone,
// upgrade and render, with kpt's own libraries (kptengine).
type engine struct {
	notBuiltin kptengine.NotBuiltinPolicy
	memo       *engineMemo
}

// engineMemo remembers the outcome of clones and renders by a digest of
// their whole input. Both are deterministic, so a repeat gets exactly what
// computing it again would give: a fleet cloned from one upstream into
// many repositories clones and renders the same files once, not once per
// repository. Each map is emptied when it reaches memoEntries.
type engineMemo struct {
	mu      sync.Mutex
	clones  map[[sha256.Size]byte]map[string]string
	renders map[[sha256.Size]byte]renderOutcome
}

const memoEntries = 256

func newEngineMemo() *engineMemo {
	return &engineMemo{clones: map[[sha256.Size]byte]map[string]string{}, renders: map[[sha256.Size]byte]renderOutcome{}}
}

// digest hashes strings and file maps, each length-prefixed, the maps in
// path order.
type digest struct{ h hash.Hash }

func newDigest() digest { return digest{sha256.New()} }

func (d digest) str(s string) digest {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	d.h.Write(n[:])
	d.h.Write([]byte(s))
	return d
}

func (d digest) files(files map[string]string) digest {
	d.str(strconv.Itoa(len(files)))
	for _, p := range slices.Sorted(maps.Keys(files)) {
		d.str(p).str(files[p])
	}
	return d
}

func (d digest) sum() (out [sha256.Size]byte) {
	copy(out[:], d.h.Sum(nil))
	return out
}

func (m *engineMemo) clone(key [sha256.Size]byte, compute func() (map[string]string, error)) (map[string]string, error) {
	m.mu.Lock()
	out, ok := m.clones[key]
	m.mu.Unlock()
	if ok {
		return maps.Clone(out), nil
	}
	out, err := compute()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if len(m.clones) >= memoEntries {
		clear(m.clones)
	}
	m.clones[key] = maps.Clone(out)
	m.mu.Unlock()
	return out, nil
}

func (m *engineMemo) render(key [sha256.Size]byte, compute func() renderOutcome) renderOutcome {
	m.mu.Lock()
	out, ok := m.renders[key]
	m.mu.Unlock()
	if ok {
		return out.copy()
	}
	out = compute()
	m.mu.Lock()
	if len(m.renders) >= memoEntries {
		clear(m.renders)
	}
	m.renders[key] = out.copy()
	m.mu.Unlock()
	return out
}

// copy is a deep copy of the outcome.
func (o renderOutcome) copy() renderOutcome {
	c := o
	c.files = maps.Clone(o.files)
	c.status = *o.status.DeepCopy()
	c.skipped = slices.Clone(o.skipped)
	return c
}

// renderOutcome is what a render of a package's pipeline gave.
type renderOutcome struct {
	// files are the rendered files; after a failure, the files Porch
	// stores when asked to push anyway (the input, the Kptfile recording
	// the failure).
	files  map[string]string
	status porchv1alpha1.RenderStatus
	failed bool
	// message is what the pipeline said on failure, as Porch words it
	// after "Details: ".
	message string
	// skipped lists the functions not run (not built into Porch).
	skipped []string
}

func (e engine) clone(upstream map[string]string, pkgPath string, deployment bool, lock gitLock) (map[string]string, error) {
	opts := kptengine.CloneOptions{PackagePath: pkgPath, Deployment: deployment, Lock: lock.engine()}
	clone := func() (map[string]string, error) { return kptengine.Clone(upstream, opts) }
	if e.memo == nil {
		return clone()
	}
	d := newDigest().files(upstream).str(opts.PackagePath).str(opts.Lock.Repo).str(opts.Lock.Directory).
		str(opts.Lock.Ref).str(opts.Lock.Commit)
	if opts.Deployment {
		d.str("deployment")
	}
	return e.memo.clone(d.sum(), clone)
}

func (e engine) upgrade(original, updated, local map[string]string, _ string, lock gitLock) (map[string]string, error) {
	return kptengine.Upgrade(original, updated, local, lock.engine())
}

// render runs the package's pipeline. A render that cannot even start (a
// file outside the package) is a failure like any other: Porch refuses
// such an update too.
func (e engine) render(files map[string]string) renderOutcome {
	if e.memo == nil {
		return e.renderNow(files)
	}
	key := newDigest().files(files).str(strconv.Itoa(int(e.notBuiltin))).sum()
	return e.memo.render(key, func() renderOutcome { return e.renderNow(files) })
}

// renderNow renders, not looking into the memo.
func (e engine) renderNow(files map[string]string) renderOutcome {
	res, err := kptengine.Render(context.Background(), files, kptengine.RenderOptions{NotBuiltin: e.notBuiltin})
	if err != nil {
		return renderOutcome{files: files, failed: true, message: err.Error()}
	}
	out := renderOutcome{files: res.Files, failed: res.Failed, message: res.Message, skipped: res.Skipped}
	out.status.Result = res.Results
	if res.Failed {
		out.status.Err = res.Message
	}
	return out
}

func (l gitLock) engine() kptengine.GitLock {
	// kptengine (as kpt) appends .git itself.
	return kptengine.GitLock{Repo: strings.TrimSuffix(l.repo, ".git"), Directory: l.directory, Ref: l.ref, Commit: l.commit}
}

// render renders files with the Sim's engine.
func (p *porch) render(files map[string]string) renderOutcome {
	return p.engine.render(files)
}

// Option configures a Sim.
type Option func(*Sim)

// SkipFunctionsNotBuiltIn makes the Sim render without the functions only
// Porch's function runner can run (any image but set-namespace,
// apply-replacements and starlark at the versions Porch builds in): they
// pass the resources through unchanged and are recorded
// (SkippedFunctions). Without it the Sim is strict, like Porch with no
// function runner reachable: such a function fails the render.
func SkipFunctionsNotBuiltIn() Option {
	return func(s *Sim) { s.porch.engine.notBuiltin = kptengine.SkipNotBuiltin }
}

// SkippedFunctions lists the images of the functions the last render of a
// revision did not run (see SkipFunctionsNotBuiltIn).
func (s *Sim) SkippedFunctions(namespace, name string) []string {
	p := s.porch
	p.Lock()
	defer p.Unlock()
	if e, ok := p.EntryLocked(resPackageRevisions, namespace, name); ok {
		return append([]string(nil), filesOf(e).skipped...)
	}
	return nil
}

// FailedRender is a write the Sim refused because the package's pipeline
// failed to render: the create of a draft, or an update of its resources.
// Porch's answer to a failed create does not say which function failed;
// the Sim keeps what its renderer recorded, so that an offline tool can.
type FailedRender struct {
	Namespace, Name     string
	Repository, Package string
	// Kptfile is the root Kptfile after the failed render, as Porch
	// stores it under push-on-render-failure: a Rendered=False condition
	// and status.renderStatus, each function's outcome.
	Kptfile string
	// Message is the renderer's message, which Porch answers with.
	Message string
}

// Functions names each function that failed and what it said
// (kptfilev1.RenderStatus.Failures); none when the render failed before a
// function ran (a Kptfile kpt refuses, say: Message tells).
func (f FailedRender) Functions() []string {
	return kptfilev1.RenderStatusOf(f.Kptfile).Failures()
}

func newFailedRender(key store.Key, spec *porchv1alpha1.PackageRevisionSpec, rendered renderOutcome) FailedRender {
	return FailedRender{
		Namespace: key.Namespace, Name: key.Name,
		Repository: spec.RepositoryName, Package: spec.PackageName,
		Kptfile: rendered.files[kptfilev1.KptFileName], Message: rendered.message,
	}
}

// FailedRenders lists, in name order, the writes of namespace the Sim
// refused because their pipeline failed to render, the last one per
// revision name; a later write of the same revision that renders, or its
// deletion, drops its entry.
func (s *Sim) FailedRenders(namespace string) []FailedRender {
	p := s.porch
	p.Lock()
	defer p.Unlock()
	var out []FailedRender
	for k, f := range p.failedRenders {
		if k.Namespace == namespace {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b FailedRender) int { return strings.Compare(a.Name, b.Name) })
	return out
}

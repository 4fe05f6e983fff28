package porchsim

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// engine makes package content the way Porch's engine does: clone,
// upgrade and render.
type engine interface {
	clone(upstream map[string]string, pkgPath string, deployment bool, lock gitLock) (map[string]string, error)
	upgrade(original, updated, local map[string]string, pkgPath string, lock gitLock) (map[string]string, error)
	render(files map[string]string) renderOutcome
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
	// skipped lists the functions not run.
	skipped []string
}

// render renders files with the Sim's engine.
func (s *Sim) render(files map[string]string) renderOutcome {
	return s.engine.render(files)
}

// imitation is the engine porchsim had before it used kpt's libraries:
// resources merged by namespace and name, no function run.
type imitation struct{}

func (imitation) clone(upstream map[string]string, pkgPath string, deployment bool, lock gitLock) (map[string]string, error) {
	out, err := withKptfile(upstream, pkgPath, func(n *yaml.RNode) error {
		if err := setName(n, lastSegment(pkgPath)); err != nil {
			return err
		}
		return setUpstream(n, lock)
	})
	if err != nil {
		return nil, err
	}
	if deployment {
		pc, err := packageContext(lastSegment(pkgPath))
		if err != nil {
			return nil, err
		}
		out[packageContextFile] = pc
	}
	return out, nil
}

func (imitation) upgrade(original, updated, local map[string]string, pkgPath string, lock gitLock) (map[string]string, error) {
	merged, err := mergePackages(original, updated, local)
	if err != nil {
		return nil, err
	}
	return withKptfile(merged, pkgPath, func(n *yaml.RNode) error {
		if err := setName(n, lastSegment(pkgPath)); err != nil {
			return err
		}
		return setUpstream(n, lock)
	})
}

func (imitation) render(files map[string]string) renderOutcome {
	rs := render(files)
	if rs.Err != "" {
		return renderOutcome{files: files, status: rs, failed: true, message: rs.Err}
	}
	return renderOutcome{files: files, status: rs}
}

package helper

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The messages below are real Porch's answers (nephio-project/porch
// 74d82d56, measured; porch-wire-contract.md "Measured against real Porch").
func porch500(msg string) error { return apierrors.NewInternalError(errors.New(msg)) }

var prGR = schema.GroupResource{Group: "porch.kpt.dev", Resource: "packagerevisions"}

const pipelineSays = "fn.render: pkg /:\n\tpkg.render:\n\tpipeline.run: error: function failure"

func TestClassification(t *testing.T) {
	cases := map[string]struct {
		err                                              error
		alreadyExists, conflict, renderFail, cloneExists bool
		details                                          string
		stored                                           bool
	}{
		"create of an existing workspace (Porch 500)": {
			err:           porch500("package revision workspaceNames must be unique; package revision with name app in repo blueprints with workspaceName v1 already exists"),
			alreadyExists: true,
		},
		"AlreadyExists of a Kubernetes API server": {
			err:           apierrors.NewAlreadyExists(prGR, "x"),
			alreadyExists: true,
		},
		"stale resourceVersion on a resources update (Porch 500)": {
			err:      porch500(`Operation cannot be fulfilled on packagerevisionresources.porch.kpt.dev "blueprints.app.v1": the object has been modified; please apply your changes to the latest version and try again`),
			conflict: true,
		},
		"another request in progress on the package (Porch 409)": {
			err:      apierrors.NewConflict(prGR, "x", errors.New("another request is already in progress")),
			conflict: true,
		},
		"render failure, nothing stored": {
			err:        porch500("error rendering package in kpt function pipeline. Package NOT pushed to remote. Fix locally (until 'kpt fn render' succeeds) and retry. Details: " + pipelineSays),
			renderFail: true, details: pipelineSays,
		},
		"render failure, stored (push-on-render-failure)": {
			err:        porch500("error rendering package in kpt function pipeline. Package pushed to remote despite render failure. Details: " + pipelineSays),
			renderFail: true, details: pipelineSays, stored: true,
		},
		"render failure of a PackageRevision update of a Draft (capital E)": {
			err:        porch500("Error rendering package in kpt function pipeline. Package NOT pushed to remote. Fix locally (until 'kpt fn render' succeeds) and retry. Details: " + pipelineSays),
			renderFail: true, details: pipelineSays,
		},
		"wrapped by the client": {
			err:        fmt.Errorf("update resources of x: %w", porch500("error rendering package in kpt function pipeline. Package NOT pushed to remote. Fix locally (until 'kpt fn render' succeeds) and retry. Details: boom")),
			renderFail: true, details: "boom",
		},
		"render failure of a create (clone, edit or upgrade: the renderer's own message)": {
			err:        porch500(pipelineSays),
			renderFail: true, details: pipelineSays,
		},
		"render failure of a create of a package kpt cannot read": {
			err:        porch500("fn.render: pkg /:\n\tpkg.render:\n\tfailed to read package: yaml: line 3: did not find expected node content"),
			renderFail: true, details: "fn.render: pkg /:\n\tpkg.render:\n\tfailed to read package: yaml: line 3: did not find expected node content",
		},
		"clone into a package that exists (Porch 500, the words measured against real Porch)": {
			err:         porch500("`clone` cannot create a new revision for package \"app\" that already exists in repo \"deploy\"; make subsequent revisions using `copy`"),
			cloneExists: true,
		},
		"other refusal of Porch": {
			err: porch500("upstream revision may not be the placeholder package revision blueprints/blueprints.app.main"),
		},
		"not an API error": {
			err: errors.New("package revision workspaceNames must be unique; Operation cannot be fulfilled"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsCloneIntoExisting(tc.err); got != tc.cloneExists {
				t.Errorf("IsCloneIntoExisting = %v, want %v", got, tc.cloneExists)
			}
			if got := IsAlreadyExists(tc.err); got != tc.alreadyExists {
				t.Errorf("IsAlreadyExists = %v, want %v", got, tc.alreadyExists)
			}
			if got := IsConflict(tc.err); got != tc.conflict {
				t.Errorf("IsConflict = %v, want %v", got, tc.conflict)
			}
			if got := IsRenderFailure(tc.err); got != tc.renderFail {
				t.Errorf("IsRenderFailure = %v, want %v", got, tc.renderFail)
			}
			details, stored := RenderFailureDetails(tc.err)
			if details != tc.details || stored != tc.stored {
				t.Errorf("RenderFailureDetails = %q, %v; want %q, %v", details, stored, tc.details, tc.stored)
			}
		})
	}
}

// Package helper holds rules about Porch's API that every client of it in
// this project shares: the controllers, porchsim (which must answer the way
// Porch does) and variantctl. It is pure: plain values in, plain values out.
package helper

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Messages and message fragments Porch answers with. Porch reports most of
// its refusals as 500 InternalError whose message carries the reason, so a
// client classifies by these (see porch-wire-contract.md, "Measured against
// real Porch").
const (
	// OptimisticLockMessage is the API server's conflict message; Porch
	// wraps it in a 500 when an update carries a stale resourceVersion.
	OptimisticLockMessage = "the object has been modified; please apply your changes to the latest version and try again"
	// RenderFailedMessage starts the message of a resources update whose
	// pipeline failed. What follows says whether the files were stored:
	// RenderFailedNotStored, or RenderFailedStored when the revision asks
	// for it with porchv1alpha1.PushOnRenderFailureAnnotation. The pipeline's own message
	// follows "Details: ".
	RenderFailedMessage = "error rendering package in kpt function pipeline. "
	// RenderFailedNotStored: Porch stored nothing.
	RenderFailedNotStored = "Package NOT pushed to remote. Fix locally (until 'kpt fn render' succeeds) and retry. "
	// RenderFailedStored: Porch stored the files it was given, unrendered,
	// with a Rendered=False condition in the Kptfile.
	RenderFailedStored = "Package pushed to remote despite render failure. "
	// renderDetails precedes the pipeline's own message.
	renderDetails = "Details: "
	// CreateRenderFailedMessage starts the renderer's own message, which
	// Porch answers a create with (500) when the new draft (a clone, an
	// edit or an upgrade) fails to render: "fn.render: pkg /:" then
	// "pkg.render:" and "pipeline.run: ...". Porch stores nothing, whatever
	// the draft's porchv1alpha1.PushOnRenderFailureAnnotation, and the
	// message does not name the function.
	CreateRenderFailedMessage = "fn.render: pkg "
	// WorkspaceNotUniqueMessage starts the message of a create whose
	// workspace (and so whose name) a revision of the package already has.
	WorkspaceNotUniqueMessage = "package revision workspaceNames must be unique"
	// CloneIntoExistingMessage is in the message of a clone into a package
	// that exists in the repository (if only as its placeholder on the
	// main branch): "`clone` cannot create a new revision for package "p"
	// that already exists in repo "r"; make subsequent revisions using
	// `copy`".
	CloneIntoExistingMessage = "cannot create a new revision for package"
	// operationCannotBeFulfilled starts every conflict message of the API
	// machinery ("Operation cannot be fulfilled on <resource> <name>: ...").
	operationCannotBeFulfilled = "Operation cannot be fulfilled"
)

// IsCloneIntoExisting reports whether a create was Porch's refusal to
// clone into a package that already exists in the repository.
func IsCloneIntoExisting(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(statusMessage(err), CloneIntoExistingMessage)
}

// IsAlreadyExists reports whether a create failed because the object is
// already there: a 409 AlreadyExists from a Kubernetes API server, or
// Porch's 500 for a workspace (and so a name) that is taken. A retried
// create whose first attempt succeeded without the client hearing of it
// gets this answer.
func IsAlreadyExists(err error) bool {
	if apierrors.IsAlreadyExists(err) {
		return true
	}
	return apierrors.IsInternalError(err) && strings.Contains(statusMessage(err), WorkspaceNotUniqueMessage)
}

// IsConflict reports whether a write lost an optimistic-concurrency race or
// met another request in progress: a 409 Conflict, or Porch's 500 that wraps
// the API machinery's conflict message (stale resourceVersion on an update
// of a PackageRevision or its resources). Both mean: read again, retry.
func IsConflict(err error) bool {
	if apierrors.IsConflict(err) {
		return true
	}
	if !apierrors.IsInternalError(err) {
		return false
	}
	msg := statusMessage(err)
	return strings.Contains(msg, operationCannotBeFulfilled) || strings.Contains(msg, OptimisticLockMessage)
}

// IsRenderFailure reports whether a write was refused because the
// package's pipeline failed to render: a create (Porch's renderer's own
// message), an update of PackageRevisionResources, or an update of a Draft
// (Porch renders it again).
func IsRenderFailure(err error) bool {
	if !apierrors.IsInternalError(err) {
		return false
	}
	msg := statusMessage(err)
	return renderMessageAt(msg) >= 0 || strings.Contains(msg, CreateRenderFailedMessage)
}

// renderMessageAt is where RenderFailedMessage starts in msg, -1 if it is
// not there. A PackageRevision update of a Draft (which re-renders) says
// it with a capital E.
func renderMessageAt(msg string) int {
	if i := strings.Index(msg, RenderFailedMessage); i >= 0 {
		return i
	}
	return strings.Index(msg, "E"+RenderFailedMessage[1:])
}

// RenderFailureDetails is what the pipeline said when it failed, without
// Porch's preamble, and whether Porch stored the files anyway
// (porchv1alpha1.PushOnRenderFailureAnnotation). details is "" when err is not a render
// failure.
func RenderFailureDetails(err error) (details string, stored bool) {
	if !IsRenderFailure(err) {
		return "", false
	}
	msg := statusMessage(err)
	at := renderMessageAt(msg)
	if at < 0 {
		// A create: the message is the renderer's own.
		return strings.TrimSpace(msg[strings.Index(msg, CreateRenderFailedMessage):]), false
	}
	rest := msg[at+len(RenderFailedMessage):]
	stored = strings.HasPrefix(rest, RenderFailedStored)
	if _, d, ok := strings.Cut(rest, renderDetails); ok {
		rest = d
	}
	return strings.TrimSpace(rest), stored
}

// statusMessage is the message of an API status error ("" otherwise).
func statusMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return ""
}

package packagevariant

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// outcome is what one sync of a variant found and did, as plain data:
// calculateStatus derives the conditions from it, announce the events.
type outcome struct {
	// paused: a person paused the variant (helper.Paused); nothing else
	// was done.
	paused bool
	// invalid: a problem only a change of the variant (or of its
	// upstream) can fix; nothing else was done.
	invalid *invalid
	// conflictWith is the variant that manages the downstream instead of
	// this one; nothing else was done.
	conflictWith *configv1alpha1.PackageVariant
	// upgrade is the last UpgradeAvailable decision the act phase made
	// (nil: it made none).
	upgrade *upgradeNote
	// progress is where the act phase left the downstream (zero: nowhere
	// to report).
	progress progress
	// The problems the act phase met, each reported in Ready.
	mutation   *mutationError
	otherDraft *otherDraftOpen
	denied     *deniedInjection
	render     *renderError
	// refused is the server's refusal that no retry can change ("" none);
	// retrying is an error the work loop retries (nil none).
	refused  string
	retrying error
	// cleanup: the deletion policy failed for some of the revisions of a
	// variant being deleted; nothing else is reported.
	cleanup *cleanupFailure
	// claimed is what the sync knew of the variant's packages from the
	// claim step on (nil: it did not get there); its applied, the record
	// of the controller's writes, is stored as status.applied.
	claimed *state
	// st is claimed once classified, what the plan and the act phase
	// worked on (nil: they did not run); its revisions are the variant's
	// downstream targets.
	st *state
}

// invalid is the Stalled and the Ready message of a problem only a person
// can fix.
type invalid struct{ stalled, ready string }

// upgradeNote is an UpgradeAvailable decision: the message ("" takes the
// condition away), and whether an earlier decision of the same sync took
// it away first (so that it is set anew, at the end of the list).
type upgradeNote struct {
	message      string
	removedFirst bool
}

// noteUpgrade records the UpgradeAvailable decision for one revision; the
// last one counts.
func (o *outcome) noteUpgrade(msg string) {
	removed := o.upgrade != nil && (o.upgrade.message == "" || o.upgrade.removedFirst)
	o.upgrade = &upgradeNote{message: msg, removedFirst: removed && msg != ""}
}

// progressKind is where the act phase left the downstream.
type progressKind int

const (
	progressNone progressKind = iota
	// progressReady: the downstream is up to date.
	progressReady
	// progressReadyProposed: up to date; revision waits for approval.
	progressReadyProposed
	// progressDraftEdited: draft revision is based on an old upstream and
	// a person changed it, so it is kept.
	progressDraftEdited
	// progressDraftUnverified: draft revision is based on an old upstream
	// and the variant cannot tell a person's edit in it from its own
	// write, so it keeps it.
	progressDraftUnverified
	// progressApprovalBeforeUpgrade, progressApprovalBeforeChanges:
	// revision is Proposed; the upgrade (or the variant's changes) follow
	// once it is published.
	progressApprovalBeforeUpgrade
	progressApprovalBeforeChanges
	// progressDeletionProposed: revision is proposed for deletion.
	progressDeletionProposed
	// progressForeign: the package holds only others' revisions.
	progressForeign
	// progressCannotUpgrade: revision is based on an upstream revision
	// that is not published any more, so Porch cannot merge.
	progressCannotUpgrade
	// progressHeldOnGone: draft revision is based on an upstream revision
	// that is not published any more, and the variant's upgrades are held
	// (spec.upgradePolicy: Manual, or its set's rollout): moving it to the
	// latest revision is a person's (or the wave's) decision.
	progressHeldOnGone
)

// progress is where the act phase left the downstream, with the revisions
// the Ready message names.
type progress struct {
	kind     progressKind
	revision *porchv1alpha1.PackageRevision
	upstream *porchv1alpha1.PackageRevision
	others   []*porchv1alpha1.PackageRevision
}

// deniedInjection is an object the variant's last write looked up to
// inject and its ServiceAccount may not get.
type deniedInjection struct {
	ref configv1alpha1.InjectedObject
	err *access.DeniedError
}

// cleanupFailure is which revisions the deletion policy failed for, and
// the first error.
type cleanupFailure struct {
	revisions []string
	err       error
}

// settle records the sync's error in o and returns what the work loop is
// to do with it: a draft just created waits for its event; an error the
// server answers the same way every time stops the retries (Refused); any
// other error but a conflict or a planned retry is retried and reported.
func (o *outcome) settle(err error) error {
	if errors.Is(err, errDraftPending) {
		return nil
	}
	if msg, ok := refusedForGood(err); ok {
		// Retrying cannot fix it: say so once and wait for a change of the
		// variant (or of its packages) instead of retrying for ever.
		o.refused = msg
		return nil
	}
	if err != nil && !apierrors.IsConflict(err) && !workloop.IsRetryAfter(err) {
		o.retrying = err
	}
	return err
}

// refusedForGood reports whether err is an answer of the API server that
// the same request will get every time (a 4xx other than conflict, timeout
// and throttling, or a missing downstream Repository), with the error's
// text.
func refusedForGood(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return "", false
	}
	s := st.Status()
	switch s.Code {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusMethodNotAllowed,
		http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return err.Error(), true
	case http.StatusNotFound:
		if s.Details != nil && s.Details.Kind == "repositories" {
			return err.Error(), true
		}
	case http.StatusInternalServerError:
		// Porch refuses a clone into a package that exists: when every
		// revision the controller sees is gone, its placeholder on the
		// repository's main branch may still be there.
		if helper.IsCloneIntoExisting(err) {
			return err.Error() + " (the package still exists in the repository, perhaps only on its main branch: delete it there or choose another spec.downstream)", true
		}
	}
	return "", false
}

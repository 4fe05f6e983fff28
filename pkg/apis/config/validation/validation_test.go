package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// changeCase is a case of a validation test: what change does to a valid
// object, and the messages the changed object gets (none: it stays valid).
type changeCase[T any] struct {
	reason string
	change func(T)
	want   []string
}

// testChanges runs cases: each validates a valid() object changed as the
// case says and compares the messages.
func testChanges[T any](t *testing.T, cases map[string]changeCase[T], valid func() T, validate func(T) field.ErrorList) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := valid()
			tc.change(obj)
			if diff := cmp.Diff(tc.want, Messages(validate(obj))); diff != "" {
				t.Errorf("%s messages (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// checkErrorFields compares errors with want by what they are about (type,
// field and bad value), not by their detail: the messages are what the
// other tests compare.
func checkErrorFields(t *testing.T, want, errs field.ErrorList) {
	t.Helper()
	if diff := cmp.Diff(want, errs, cmpopts.IgnoreFields(field.Error{}, "Detail")); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

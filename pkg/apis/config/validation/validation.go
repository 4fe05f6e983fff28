// Package validation holds the rules of PackageVariant and
// PackageVariantSet specs, as pure functions returning field.ErrorList (as
// Kubernetes' pkg/apis/apps/validation does for its workloads). The
// controllers report what they return in their Stalled conditions, the
// PackageVariantSet controller also checks every spec it renders with
// them, and variantctl prints them.
//
// Each error's Field and Type say what is wrong for programs; its Detail
// is the whole message a person reads, field path included, in the
// reference controllers' words where they have them. Messages returns
// those messages.
package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Messages are the messages of errs, in order, as the controllers' Stalled
// conditions and variantctl give them.
func Messages(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Detail)
	}
	return out
}

// notSupported is field.NotSupported with our message instead of its list
// of values.
func notSupported(fldPath *field.Path, value any, message string) *field.Error {
	return &field.Error{Type: field.ErrorTypeNotSupported, Field: fldPath.String(), BadValue: value, Detail: message}
}

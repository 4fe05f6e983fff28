package validation

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchhelper "github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
)

// reservedContextKeys are set by kpt and Porch themselves (the package name
// and path); a variant that changed them would break every function that
// relies on them.
var reservedContextKeys = []string{"name", "package-path"}

// ValidatePackageVariant returns every problem of a variant's spec, so a
// person sees all of them at once. Defaults are not written back: an empty
// policy means the default.
func ValidatePackageVariant(pv *configv1alpha1.PackageVariant) field.ErrorList {
	return ValidatePackageVariantSpec(&pv.Spec, field.NewPath("spec"))
}

// ValidatePackageVariantSpec returns every problem of a variant's spec,
// found at fldPath.
func ValidatePackageVariantSpec(spec *configv1alpha1.PackageVariantSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path := fldPath.Child("upstream"); spec.Upstream == nil {
		errs = append(errs, field.Required(path, "missing required field "+path.String()))
	} else {
		errs = append(errs, validateUpstream(spec.Upstream, path)...)
	}
	if path := fldPath.Child("downstream"); spec.Downstream == nil {
		errs = append(errs, field.Required(path, "missing required field "+path.String()))
	} else {
		errs = append(errs, validateDownstream(spec.Downstream, path)...)
	}
	switch path := fldPath.Child("adoptionPolicy"); spec.AdoptionPolicy {
	case "", configv1alpha1.AdoptionPolicyAdoptNone, configv1alpha1.AdoptionPolicyAdoptExisting:
	default:
		errs = append(errs, notSupported(path, spec.AdoptionPolicy, fmt.Sprintf("%s field can only be %q or %q",
			path, configv1alpha1.AdoptionPolicyAdoptNone, configv1alpha1.AdoptionPolicyAdoptExisting)))
	}
	switch path := fldPath.Child("deletionPolicy"); spec.DeletionPolicy {
	case "", configv1alpha1.DeletionPolicyDelete, configv1alpha1.DeletionPolicyOrphan:
	default:
		errs = append(errs, notSupported(path, spec.DeletionPolicy, deletionPolicyMessage(path)))
	}
	switch path := fldPath.Child("upgradePolicy"); spec.UpgradePolicy {
	case "", configv1alpha1.UpgradePolicyAutomatic, configv1alpha1.UpgradePolicyManual:
	default:
		errs = append(errs, notSupported(path, spec.UpgradePolicy, upgradePolicyMessage(path)))
	}
	errs = append(errs, ValidatePackageContext(spec.PackageContext, fldPath.Child("packageContext"))...)
	for i, inj := range spec.Injectors {
		if path := fldPath.Child("injectors").Index(i).Child("name"); strings.TrimSpace(inj.Name) == "" {
			errs = append(errs, field.Required(path, path.String()+" must not be empty"))
		}
		if inj.Kind != nil {
			gk := schema.GroupKind{Kind: *inj.Kind}
			if inj.Group != nil {
				gk.Group = *inj.Group
			}
			if why := confighelper.NeverRead(gk); why != "" {
				path := fldPath.Child("injectors").Index(i).Child("kind")
				errs = append(errs, field.Forbidden(path, path.String()+": "+why))
			}
		}
	}
	if a := spec.ServiceAccountName; a != "" {
		path := fldPath.Child("serviceAccountName")
		for _, msg := range k8svalidation.IsDNS1123Subdomain(a) {
			errs = append(errs, field.Invalid(path, a, fmt.Sprintf("%s %q is not a ServiceAccount name: %s", path, a, msg)))
		}
	}
	if p := spec.Pipeline; p != nil {
		path := fldPath.Child("pipeline")
		for i, fn := range p.Mutators {
			if fn.Image == "" && fn.Exec == "" {
				errs = append(errs, functionRequired(path.Child("mutators").Index(i)))
			}
		}
		for i, fn := range p.Validators {
			if fn.Image == "" && fn.Exec == "" {
				errs = append(errs, functionRequired(path.Child("validators").Index(i)))
			}
		}
	}
	return errs
}

func validateUpstream(up *configv1alpha1.Upstream, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path := fldPath.Child("repo"); up.Repo == "" {
		errs = append(errs, field.Required(path, "missing required field "+path.String()))
	}
	if path := fldPath.Child("package"); up.Package == "" {
		errs = append(errs, field.Required(path, "missing required field "+path.String()))
	}
	if path := fldPath.Child("revision"); up.Revision < 0 {
		errs = append(errs, field.Invalid(path, up.Revision, fmt.Sprintf("%s %d is invalid: give a published revision number (1 or more), "+
			"or leave it out to follow the latest published revision; the placeholder revision -1 cannot be cloned", path, up.Revision)))
	}
	if path := fldPath.Child("workspaceName"); up.WorkspaceName == porchhelper.PlaceholderWorkspace {
		errs = append(errs, field.Invalid(path, up.WorkspaceName, fmt.Sprintf("%s %q is the placeholder revision that tracks a branch and cannot be cloned; "+
			"name the workspace of a published revision, or leave it out to follow the latest published revision", path, up.WorkspaceName)))
	}
	return errs
}

// validateDownstream returns, besides missing fields, the reasons Porch
// would refuse, on every try, to create a draft of the package: a
// Repository name that is not a Kubernetes object name, a package path
// with an empty, "." or ".." segment, or a PackageRevision name
// (<repo>.<package with / as .>.<workspace>) that is not a DNS subdomain
// (too long, upper case, other characters).
func validateDownstream(ds *configv1alpha1.Downstream, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	repoPath, pkgPath := fldPath.Child("repo"), fldPath.Child("package")
	if ds.Repo == "" {
		errs = append(errs, field.Required(repoPath, "missing required field "+repoPath.String()))
	}
	if ds.Package == "" {
		errs = append(errs, field.Required(pkgPath, "missing required field "+pkgPath.String()))
	}
	if len(errs) > 0 {
		return errs
	}
	if msgs := utilvalidation.IsDNS1123Subdomain(ds.Repo); len(msgs) > 0 {
		errs = append(errs, field.Invalid(repoPath, ds.Repo, fmt.Sprintf("%s %q is not a Repository name: %s", repoPath, ds.Repo, strings.Join(msgs, "; "))))
	}
	if !porchhelper.IsPackagePath(ds.Package) {
		errs = append(errs, field.Invalid(pkgPath, ds.Package, fmt.Sprintf(
			"%s %q is not a package path: give a relative path without empty, \".\" or \"..\" segments", pkgPath, ds.Package)))
	}
	if len(errs) > 0 {
		return errs
	}
	// The longest workspace the variant uses grows with its drafts; the
	// first is number 1.
	name := porchhelper.PackageRevisionName(ds.Repo, ds.Package, configv1alpha1.DraftWorkspacePrefix+"1")
	if msgs := utilvalidation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fldPath, name, fmt.Sprintf("%s: Porch would name the draft %q, which it refuses: %s; "+
			"use a lower-case package path of letters, digits, '-' and '/' that keeps the name within 253 characters",
			fldPath, name, strings.Join(msgs, "; "))))
	}
	return errs
}

// ValidatePackageContext returns the problems of a package context found
// at fldPath: the reserved keys name and package-path may appear neither
// in data nor in removeKeys.
func ValidatePackageContext(pc *configv1alpha1.PackageContext, fldPath *field.Path) field.ErrorList {
	if pc == nil {
		return nil
	}
	var errs field.ErrorList
	for _, k := range reservedContextKeys {
		if _, ok := pc.Data[k]; ok {
			errs = append(errs, standard(field.Forbidden(fldPath.Child("data").Key(k), reservedMessage(k))))
		}
	}
	for i, k := range pc.RemoveKeys {
		if slices.Contains(reservedContextKeys, k) {
			errs = append(errs, standard(field.Forbidden(fldPath.Child("removeKeys").Index(i), reservedMessage(k))))
		}
	}
	return errs
}

func reservedMessage(k string) string {
	return fmt.Sprintf("must not contain the key %q: it is reserved for kpt and Porch", k)
}

func functionRequired(fldPath *field.Path) *field.Error {
	return field.Required(fldPath.Child("image"), fldPath.String()+": image or exec is required")
}

func deletionPolicyMessage(fldPath *field.Path) string {
	return fmt.Sprintf("%s can only be %q or %q", fldPath, configv1alpha1.DeletionPolicyOrphan, configv1alpha1.DeletionPolicyDelete)
}

func upgradePolicyMessage(fldPath *field.Path) string {
	return fmt.Sprintf("%s can only be %q or %q", fldPath, configv1alpha1.UpgradePolicyAutomatic, configv1alpha1.UpgradePolicyManual)
}

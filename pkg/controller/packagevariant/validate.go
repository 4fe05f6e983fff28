package packagevariant

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	"github.com/porch-variants/variant-controller/pkg/mutate"
)

// validate returns every problem of a variant's spec, in the reference
// controller's words where it has them, so a person sees all of them at
// once. Defaults are not written back: an empty policy means the default.
func validate(pv *configv1alpha1.PackageVariant) []string {
	var errs []string
	if up := pv.Spec.Upstream; up == nil {
		errs = append(errs, "missing required field spec.upstream")
	} else {
		if up.Repo == "" {
			errs = append(errs, "missing required field spec.upstream.repo")
		}
		if up.Package == "" {
			errs = append(errs, "missing required field spec.upstream.package")
		}
		if up.Revision < 0 {
			errs = append(errs, fmt.Sprintf("spec.upstream.revision %d is invalid: give a published revision number (1 or more), or leave it out to follow the latest published revision; the placeholder revision -1 cannot be cloned", up.Revision))
		}
		if up.WorkspaceName == helper.PlaceholderWorkspace {
			errs = append(errs, `spec.upstream.workspaceName "main" is the placeholder revision that tracks a branch and cannot be cloned; name the workspace of a published revision, or leave it out to follow the latest published revision`)
		}
	}
	if ds := pv.Spec.Downstream; ds == nil {
		errs = append(errs, "missing required field spec.downstream")
	} else {
		if ds.Repo == "" {
			errs = append(errs, "missing required field spec.downstream.repo")
		}
		if ds.Package == "" {
			errs = append(errs, "missing required field spec.downstream.package")
		}
		errs = append(errs, downstreamNameErrors(ds.Repo, ds.Package)...)
	}
	switch pv.Spec.AdoptionPolicy {
	case "", configv1alpha1.AdoptionPolicyAdoptNone, configv1alpha1.AdoptionPolicyAdoptExisting:
	default:
		errs = append(errs, fmt.Sprintf("spec.adoptionPolicy field can only be %q or %q",
			configv1alpha1.AdoptionPolicyAdoptNone, configv1alpha1.AdoptionPolicyAdoptExisting))
	}
	switch pv.Spec.DeletionPolicy {
	case "", configv1alpha1.DeletionPolicyDelete, configv1alpha1.DeletionPolicyOrphan:
	default:
		errs = append(errs, fmt.Sprintf("spec.deletionPolicy can only be %q or %q",
			configv1alpha1.DeletionPolicyOrphan, configv1alpha1.DeletionPolicyDelete))
	}
	switch pv.Spec.UpgradePolicy {
	case "", configv1alpha1.UpgradePolicyAutomatic, configv1alpha1.UpgradePolicyManual:
	default:
		errs = append(errs, fmt.Sprintf("spec.upgradePolicy can only be %q or %q",
			configv1alpha1.UpgradePolicyAutomatic, configv1alpha1.UpgradePolicyManual))
	}
	errs = append(errs, mutate.ValidatePackageContext(pv.Spec.PackageContext)...)
	for i, inj := range pv.Spec.Injectors {
		if strings.TrimSpace(inj.Name) == "" {
			errs = append(errs, fmt.Sprintf("spec.injectors[%d].name must not be empty", i))
		}
	}
	if p := pv.Spec.Pipeline; p != nil {
		for i, fn := range p.Mutators {
			if fn.Image == "" && fn.Exec == "" {
				errs = append(errs, fmt.Sprintf("spec.pipeline.mutators[%d]: image or exec is required", i))
			}
		}
		for i, fn := range p.Validators {
			if fn.Image == "" && fn.Exec == "" {
				errs = append(errs, fmt.Sprintf("spec.pipeline.validators[%d]: image or exec is required", i))
			}
		}
	}
	return errs
}

// adoptionPolicy is the effective adoption policy (default adoptNone).
func adoptionPolicy(pv *configv1alpha1.PackageVariant) configv1alpha1.AdoptionPolicy {
	if pv.Spec.AdoptionPolicy == "" {
		return configv1alpha1.AdoptionPolicyAdoptNone
	}
	return pv.Spec.AdoptionPolicy
}

// deletionPolicy is the effective deletion policy (default delete).
func deletionPolicy(pv *configv1alpha1.PackageVariant) configv1alpha1.DeletionPolicy {
	if pv.Spec.DeletionPolicy == "" {
		return configv1alpha1.DeletionPolicyDelete
	}
	return pv.Spec.DeletionPolicy
}

// manualUpgrades reports whether the variant follows the latest upstream
// revision without upgrading to it by itself.
func manualUpgrades(pv *configv1alpha1.PackageVariant) bool {
	return pv.Spec.UpgradePolicy == configv1alpha1.UpgradePolicyManual
}

// downstreamNameErrors are the reasons Porch would refuse, on every try, to
// create a draft of package pkg in repository repo: a Repository name that
// is not a Kubernetes object name, a package path with an empty, "." or ".."
// segment, or a PackageRevision name (<repo>.<package with / as .>.<workspace>)
// that is not a DNS subdomain (too long, upper case, other characters).
func downstreamNameErrors(repo, pkg string) []string {
	if repo == "" || pkg == "" {
		return nil
	}
	var errs []string
	if msgs := validation.IsDNS1123Subdomain(repo); len(msgs) > 0 {
		errs = append(errs, fmt.Sprintf("spec.downstream.repo %q is not a Repository name: %s", repo, strings.Join(msgs, "; ")))
	}
	for _, seg := range strings.Split(pkg, "/") {
		if seg == "" || seg == "." || seg == ".." {
			errs = append(errs, fmt.Sprintf("spec.downstream.package %q is not a package path: give a relative path without empty, \".\" or \"..\" segments", pkg))
			break
		}
	}
	if len(errs) > 0 {
		return errs
	}
	// The longest workspace the variant uses grows with its drafts;
	// packagevariant-1 is the first.
	name := repo + "." + strings.ReplaceAll(pkg, "/", ".") + "." + workspacePrefix + "1"
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		errs = append(errs, fmt.Sprintf("spec.downstream: Porch would name the draft %q, which it refuses: %s; use a lower-case package path of letters, digits, '-' and '/' that keeps the name within 253 characters",
			name, strings.Join(msgs, "; ")))
	}
	return errs
}

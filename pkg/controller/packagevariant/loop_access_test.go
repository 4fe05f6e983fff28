package packagevariant_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/access/accesstest"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
)

// TestLoopInjectsOnlyWhatItsServiceAccountMayGet: a variant whose
// ServiceAccount may get the ConfigMap injects it; one whose account may
// not gets Ready=False naming the object and the permission, and its draft
// holds the refusal, not the data; a grant takes effect by itself; the
// default account applies to a variant that names none.
func TestLoopInjectsOnlyWhatItsServiceAccountMayGet(t *testing.T) {
	r := accesstest.New()
	r.Grant(testNS, "reader", "configmaps", "eu-west")
	h := newHarness(t, withConfigMap("eu-west", map[string]string{"region": "eu-west-1"}), withAccess(r.Checker(access.Options{DefaultServiceAccount: "nobody"})))

	allowed := customised("allowed", "allowed")
	allowed.Spec.ServiceAccountName = "reader"
	h.CreateVariant(allowed)
	denied := customised("denied", "denied")
	denied.Spec.ServiceAccountName = "nobody"
	h.CreateVariant(denied)
	byDefault := customised("by-default", "by-default")
	h.CreateVariant(byDefault)

	h.waitReady("allowed")
	mustContain(t, "the allowed variant's region.yaml", h.Files(h.revisions("allowed")[0].Name)["region.yaml"], "region: eu-west-1")
	for _, name := range []string{"denied", "by-default"} {
		c := h.WaitVariantCondition(name, packagevariant.ConditionReady, metav1.ConditionFalse, packagevariant.ReasonInjectionForbidden)
		mustContain(t, name+"'s Ready message", c.Message, `ConfigMap "eu-west" is not injected`,
			`ServiceAccount `+testNS+`/nobody may not get configmaps "eu-west" in namespace `+testNS, "grant it get on configmaps")
		files := h.Files(h.revisions(name)[0].Name)
		for path, content := range files {
			if strings.Contains(content, "eu-west-1") {
				t.Errorf("%s: the draft's %s holds the data its account may not read:\n%s", name, path, content)
			}
		}
	}

	r.Grant(testNS, "nobody", "configmaps", "eu-west")
	h.waitReady("denied")
	h.waitReady("by-default")
	mustContain(t, "the denied variant's region.yaml once granted", h.Files(h.revisions("denied")[0].Name)["region.yaml"], "region: eu-west-1")
	h.Settle()
}

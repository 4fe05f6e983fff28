//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// TestInjectionBoundByServiceAccount: with real RBAC on the API server, a
// variant whose ServiceAccount may get the ConfigMap it injects gets its
// data into the draft; one whose account may not gets Ready=False naming
// the object and the permission, and its draft holds no data; a controller
// run with --default-service-account applies that account to a variant
// that names none (the lockdown).
func TestInjectionBoundByServiceAccount(t *testing.T) {
	forEachBackend(t, testInjectionBoundByServiceAccount)
}

func testInjectionBoundByServiceAccount(t *testing.T, b *backend) {
	ctx := context.Background()
	ns := createNamespace(t, b.ns("e2e-access"))
	repository(t, ns, repoBlueprints, false, nil)
	publishRevision(t, ns, repoBlueprints, "app", "v1", initTask("e2e blueprint"), map[string]string{
		"settings.yaml": diffSettings,
	}, false)
	for _, name := range []string{"reader-repo", "nobody-repo", "default-repo"} {
		repository(t, ns, name, true, nil)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"region": "secret-region-7"}}
	if _, err := env.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// reader may get that one ConfigMap; nobody may get nothing.
	for _, account := range []string{"reader", "nobody"} {
		if _, err := e2eutil.ServiceAccountUser(ctx, env.kube, env.adminConfig, ns, account, env.workDir); err != nil {
			t.Fatal(err)
		}
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-settings", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"settings"}, Verbs: []string{"get"}}}}
	if _, err := env.kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader-reads-settings", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-settings"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}}}
	if _, err := env.kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The lockdown: variants that name no account read as nobody.
	ctrl := startController(t, "controller", ns, "--default-service-account", "nobody")
	ctrl.waitReady(t)
	variant := func(name, repo, account string) {
		pv := &configv1alpha1.PackageVariant{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: configv1alpha1.PackageVariantSpec{
				Upstream:           &configv1alpha1.Upstream{Repo: repoBlueprints, Package: "app"},
				Downstream:         &configv1alpha1.Downstream{Repo: repo, Package: "app"},
				Injectors:          []configv1alpha1.InjectionSelector{{Name: "settings"}},
				ServiceAccountName: account,
			},
		}
		if _, err := env.admin.ConfigV1alpha1().PackageVariants(ns).Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	variant("reader", "reader-repo", "reader")
	variant("nobody", "nobody-repo", "nobody")
	variant("by-default", "default-repo", "")

	ready := func(name string) (*metav1.Condition, string) {
		pv, err := env.admin.ConfigV1alpha1().PackageVariants(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err.Error()
		}
		c := meta.FindStatusCondition(pv.Status.Conditions, "Ready")
		if c == nil || c.ObservedGeneration != pv.Generation {
			return nil, fmt.Sprintf("Ready %+v", c)
		}
		return c, fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
	}
	settingsOf := func(repo string) string {
		revs := downstreamRevisions(ctx, ns)[repo+"/app"]
		if len(revs) == 0 {
			return ""
		}
		prr, err := env.admin.PorchV1alpha1().PackageRevisionResources(ns).Get(ctx, revs[0], metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return prr.Spec.Resources["settings.yaml"]
	}

	eventually(t, ctrl, "the reader's variant Ready with the data", func() (bool, string) {
		c, msg := ready("reader")
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(settingsOf("reader-repo"), "secret-region-7"), msg
	})
	for _, name := range []string{"nobody", "by-default"} {
		var last *metav1.Condition
		eventually(t, ctrl, name+"'s variant refused", func() (bool, string) {
			c, msg := ready(name)
			last = c
			return c != nil && c.Reason == "InjectionForbidden", msg
		})
		for _, want := range []string{`ConfigMap "settings" is not injected`, "ServiceAccount " + ns + `/nobody may not get configmaps "settings"`, "grant it get on configmaps"} {
			if !strings.Contains(last.Message, want) {
				t.Errorf("%s: Ready message %q does not say %q", name, last.Message, want)
			}
		}
		repo := map[string]string{"nobody": "nobody-repo", "by-default": "default-repo"}[name]
		eventually(t, ctrl, name+"'s draft", func() (bool, string) { s := settingsOf(repo); return s != "", s })
		if s := settingsOf(repo); strings.Contains(s, "secret-region-7") {
			t.Errorf("%s: the draft holds the data its account may not read:\n%s", name, s)
		}
	}
}

package e2eutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
)

// What both suites' variantctl diff tests share: the set they diff, the
// read-only user they run it as, and the fleet's versions before and after.

// DiffSet is the set of the diff tests: blueprints/app pinned to revision
// 1 over the repositories labelled env=prod, deleting what it drops, the
// region in the package context and the region's settings ConfigMap
// injected.
func DiffSet(ns string) *configv1alpha2.PackageVariantSet {
	return &configv1alpha2.PackageVariantSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: ns},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "blueprints", Package: "app", Revision: 1},
			Targets: []configv1alpha2.Target{{
				RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
				Template: &configv1alpha2.PackageVariantTemplate{
					DeletionPolicy: ptr.To(configv1alpha1.DeletionPolicyDelete),
					PackageContext: &configv1alpha2.PackageContextTemplate{DataExprs: []configv1alpha2.MapExpr{
						{Key: ptr.To("region"), ValueExpr: ptr.To("repository.labels['region']")}}},
					Injectors: []configv1alpha2.InjectionSelectorTemplate{{NameExpr: ptr.To("'settings-' + repository.labels['region']")}},
				},
			}},
		},
	}
}

// WriteManifest writes obj as YAML into dir and returns the -f flag that
// names it.
func WriteManifest(dir string, obj any) (string, error) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "manifest.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return "", err
	}
	return "-f=" + p, nil
}

// ExitCode is the exit status of a finished command (-1 if it did not run).
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var e *exec.ExitError
	if errors.As(err, &e) {
		return e.ExitCode()
	}
	return -1
}

// User is a ServiceAccount to run a command as: its kubeconfig, the name
// the audit log records its requests under, and its token.
type User struct {
	Kubeconfig string
	Name       string
	Token      string
}

// ServiceAccountUser creates a ServiceAccount (with no rights of its own)
// and a kubeconfig with a token of it, valid for an hour, in dir.
func ServiceAccountUser(ctx context.Context, kube kubernetes.Interface, cluster *rest.Config, ns, name, dir string) (User, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return User{}, fmt.Errorf("create ServiceAccount %s/%s: %w", ns, name, err)
	}
	token, err := ServiceAccountToken(ctx, kube, ns, name, time.Hour)
	if err != nil {
		return User{}, err
	}
	path := filepath.Join(dir, ns+"-"+name+".kubeconfig")
	if err := clientcmd.WriteToFile(*TokenKubeconfig(cluster, token, ns), path); err != nil {
		return User{}, fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return User{Kubeconfig: path, Name: "system:serviceaccount:" + ns + ":" + name, Token: token}, nil
}

// DiffReader is a ServiceAccount that may read what variantctl diff reads
// in ns and nothing else: a write would be refused by RBAC too, on top of
// the client that cannot send one.
func DiffReader(ctx context.Context, kube kubernetes.Interface, cluster *rest.Config, ns, dir string) (User, error) {
	read := []string{"get", "list", "watch"}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "diff-reader", Namespace: ns},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"config.porch.kpt.dev"}, Resources: []string{"repositories", "packagevariants", "packagevariantsets"}, Verbs: read},
			{APIGroups: []string{"porch.kpt.dev"}, Resources: []string{"packagerevisions", "packagerevisionresources"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: read},
		},
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return User{}, fmt.Errorf("create Role %s/diff-reader: %w", ns, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "diff-reader", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "diff-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "diff-reader", Namespace: ns}},
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return User{}, fmt.Errorf("create RoleBinding %s/diff-reader: %w", ns, err)
	}
	return ServiceAccountUser(ctx, kube, cluster, ns, "diff-reader", dir)
}

// FleetVersions is the resourceVersion of every set, variant and package
// revision of ns (Porch's placeholders included), keyed "set/<name>",
// "pv/<name>", "pr/<name>", for "nothing changed".
func FleetVersions(ctx context.Context, client versioned.Interface, ns string) (map[string]string, error) {
	out := map[string]string{}
	sets, err := client.ConfigV1alpha2().PackageVariantSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, s := range sets.Items {
		out["set/"+s.Name] = s.ResourceVersion
	}
	pvs, err := client.ConfigV1alpha1().PackageVariants(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, pv := range pvs.Items {
		out["pv/"+pv.Name] = pv.ResourceVersion
	}
	prs, err := client.PorchV1alpha1().PackageRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, pr := range prs.Items {
		out["pr/"+pr.Name] = pr.ResourceVersion
	}
	return out, nil
}

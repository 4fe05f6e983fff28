//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// TestLeaseLossFailsSafe: the leader may no longer renew its Lease (its
// permission is revoked, as a partitioned or throttled replica would
// fail): it stops writing and exits non-zero within the renew deadline, a
// standby running as another ServiceAccount takes the Lease within the
// lease duration and carries on, and the audit log shows no write of the
// old leader after the new one's first.
func TestLeaseLossFailsSafe(t *testing.T) {
	forEachBackend(t, testLeaseLossFailsSafe)
}

func testLeaseLossFailsSafe(t *testing.T, b *backend) {
	ns := createNamespace(t, b.ns("e2e-lease-loss"))
	ctx := context.Background()
	prodSites(t, ns)
	standbyUser := standbyServiceAccount(t, ctx)

	leader := startLeaderElecting(t, "leader", ns)
	eventually(t, leader, "the first process to lead", func() (bool, string) {
		return strings.Contains(leader.Output(), "Became leader"), "holder " + leaseHolder(t, ctx)
	})
	standby := startLeaderElecting(t, "standby", ns, "--kubeconfig", standbyUser.Kubeconfig)
	standby.waitReady(t)
	createProdSet(t, ctx, ns)
	eventually(t, leader, "2 Ready variants", func() (bool, string) { return fleetReady(ctx, ns, 2) })
	oldHolder := leaseHolder(t, ctx)

	before, err := env.audit.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	revokeLeaderElection(t, ctx)
	revoked := time.Now()
	// Work that arrives while the leader can no longer lead.
	repository(t, ns, "site-3", true, map[string]string{"env": "prod"})

	select {
	case <-leader.Done():
	case <-time.After(renewDeadline + leaseDuration + timeout/4):
		t.Fatalf("the leader did not exit after losing its Lease\n%s", leader.Tail())
	}
	if code := e2eutil.ExitCode(leader.Err()); code == 0 {
		t.Errorf("the leader exited 0 after losing its Lease, want non-zero so the kubelet restarts it\n%s", leader.Tail())
	}
	if !strings.Contains(leader.Output(), "Lost the leader election Lease") {
		t.Errorf("the leader's log does not say it lost the Lease\n%s", leader.Tail())
	}
	t.Logf("the old leader exited %s after its Lease permission was revoked (renew deadline %s)", time.Since(revoked).Round(time.Millisecond), renewDeadline)

	// The leader's last renewal was before the revocation.
	waitTakeover(t, ctx, standby, oldHolder, revoked, "the revocation")
	eventually(t, standby, "3 Ready variants under the new leader", func() (bool, string) { return fleetReady(ctx, ns, 3) })

	events, _, err := env.audit.Since(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	writes := []string{"create", "update", "patch", "delete", "deletecollection"}
	var newFirst time.Time
	for _, e := range e2eutil.Select(events, e2eutil.ByUser(standbyUser.Name), e2eutil.ByVerb(writes...)) {
		if e2eutil.CodeOf(&e) < 400 {
			newFirst = e.RequestReceivedTimestamp.Time
			break
		}
	}
	if newFirst.IsZero() {
		t.Fatal("the audit log holds no write of the new leader")
	}
	for _, e := range e2eutil.Select(events, e2eutil.ByUser(e2eutil.ControllerUser), e2eutil.ByVerb(writes...)) {
		if !e.RequestReceivedTimestamp.Time.Before(newFirst) {
			t.Errorf("the old leader wrote after the new leader's first write (%s): %s at %s, answered %d",
				newFirst.Format(time.StampMicro), e2eutil.RequestOf(&e), e.RequestReceivedTimestamp.Format(time.StampMicro), e2eutil.CodeOf(&e))
		}
	}
	for downstream, names := range downstreamRevisions(ctx, ns) {
		if len(names) != 1 {
			t.Errorf("%s has %d revisions, want 1: %v", downstream, len(names), names)
		}
	}
}

// standbyServiceAccount is a second ServiceAccount with the controller's
// rights (bound to the ClusterRoles and the leader election Role deploy/
// installs), so the audit log tells two replicas apart and one's Lease
// permission can be revoked alone. The bindings go when the test ends.
func standbyServiceAccount(t *testing.T, ctx context.Context) e2eutil.User {
	t.Helper()
	const name = "variant-controller-standby"
	user, err := e2eutil.ServiceAccountUser(ctx, env.kube, env.adminConfig, controllerNS, name, env.workDir)
	if err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: controllerNS}}
	for _, role := range []string{"variant-controller", "variant-controller-injection"} {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subject,
		}
		if _, err := env.kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
		})
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-leader-election", Namespace: controllerNS},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "variant-controller-leader-election"},
		Subjects:   subject,
	}
	if _, err := env.kube.RbacV1().RoleBindings(controllerNS).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.kube.RbacV1().RoleBindings(controllerNS).Delete(context.Background(), rb.Name, metav1.DeleteOptions{})
	})
	return user
}

// revokeLeaderElection deletes the controller ServiceAccount's binding to
// the leader election Role (deploy/rbac/leader_election_role.yaml); it is
// put back when the test ends.
func revokeLeaderElection(t *testing.T, ctx context.Context) {
	t.Helper()
	const name = "variant-controller-leader-election"
	rb, err := env.kube.RbacV1().RoleBindings(controllerNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.kube.RbacV1().RoleBindings(controllerNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		restore := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: rb.Name, Namespace: rb.Namespace, Labels: rb.Labels},
			RoleRef:    rb.RoleRef,
			Subjects:   rb.Subjects,
		}
		if _, err := env.kube.RbacV1().RoleBindings(controllerNS).Create(context.Background(), restore, metav1.CreateOptions{}); err != nil {
			t.Errorf("restore RoleBinding %s: %v", name, err)
		}
	})
}

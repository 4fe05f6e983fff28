package e2eutil

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// The manifests of TestServiceAccountGrants, in testdata/rbac: roles.yaml
// binds a ClusterRole, an aggregated ClusterRole and another account's role;
// lease.yml a namespaced Role. testdata/rbac-refused holds one directory of
// manifests for each refusal of TestServiceAccountGrantsRefuses.
const rbacTestdata = "testdata/rbac"

// TestServiceAccountGrants: every verb on every resource the account's
// bindings give it, through a ClusterRole, an aggregated ClusterRole (the
// rules of the roles its selector matches) and a namespaced Role; bindings
// of other accounts are left out.
func TestServiceAccountGrants(t *testing.T) {
	grants, err := ServiceAccountGrants(rbacTestdata, "system", "controller")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range grants {
		got = append(got, g.Binding+": "+g.String())
	}
	want := []string{
		`ClusterRoleBinding "ctrl": get example.dev/widgets (ClusterRole ctrl, roles.yaml)`,
		`ClusterRoleBinding "ctrl": update example.dev/widgets (ClusterRole ctrl, roles.yaml)`,
		`ClusterRoleBinding "ctrl": get example.dev/widgets/status (ClusterRole ctrl, roles.yaml)`,
		`ClusterRoleBinding "ctrl": update example.dev/widgets/status (ClusterRole ctrl, roles.yaml)`,
		`ClusterRoleBinding "ctrl-injection": list configmaps (ClusterRole ctrl-injection-configmaps, roles.yaml)`,
		`RoleBinding "lease/system": create coordination.k8s.io/leases (Role system/lease, lease.yml)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
}

func TestServiceAccountGrantsRefuses(t *testing.T) {
	cases := map[string]struct {
		dir  string // manifests
		want string
	}{
		"a binding to a role the manifests lack": {
			dir:  "testdata/rbac-refused/missing-role",
			want: `ClusterRoleBinding "ctrl" names ClusterRole "missing", which the manifests do not define`,
		},
		"a wildcard": {
			dir:  "testdata/rbac-refused/wildcard",
			want: "a rule has a wildcard",
		},
		"a misspelt field": {
			dir:  "testdata/rbac-refused/misspelt-field",
			want: `unknown field "apiGroup"`,
		},
		"nothing for the account": {
			dir:  rbacTestdata,
			want: "grants ServiceAccount system/nobody anything",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			account := "controller"
			if strings.Contains(tc.want, "nobody") {
				account = "nobody"
			}
			_, err := ServiceAccountGrants(tc.dir, "system", account)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestGrantUses: a request uses a grant when RBAC allowed it through the
// grant's binding, for its verb and resource (subresource included).
func TestGrantUses(t *testing.T) {
	grant := Grant{Binding: `ClusterRoleBinding "ctrl"`, Request: Request{Verb: "update", Group: "example.dev", Resource: "widgets/status"}}
	event := func(verb, group, resource, sub, decision, reason string) auditv1.Event {
		return auditv1.Event{
			Verb:        verb,
			ObjectRef:   &auditv1.ObjectReference{APIGroup: group, Resource: resource, Subresource: sub, Name: "w"},
			Annotations: map[string]string{decisionAnnotation: decision, reasonAnnotation: reason},
		}
	}
	const byCtrl = `RBAC: allowed by ClusterRoleBinding "ctrl" of ClusterRole "ctrl" to ServiceAccount "controller/system"`
	cases := map[string]struct {
		event auditv1.Event
		want  bool
	}{
		"allowed through the binding":   {event("update", "example.dev", "widgets", "status", "allow", byCtrl), true},
		"the main resource, not status": {event("update", "example.dev", "widgets", "", "allow", byCtrl), false},
		"another verb":                  {event("patch", "example.dev", "widgets", "status", "allow", byCtrl), false},
		"refused":                       {event("update", "example.dev", "widgets", "status", "forbid", ""), false},
		"allowed through another binding": {event("update", "example.dev", "widgets", "status", "allow",
			`RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"`), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := grant.Uses(&tc.event); got != tc.want {
				t.Errorf("Uses = %v, want %v", got, tc.want)
			}
		})
	}
	refused := event("update", "example.dev", "widgets", "status", "forbid", "")
	allowed := event("update", "example.dev", "widgets", "status", "allow", byCtrl)
	if !Forbidden(&refused) || Forbidden(&allowed) {
		t.Errorf("Forbidden: refused %v, allowed %v; want true, false", Forbidden(&refused), Forbidden(&allowed))
	}
	named := grant
	named.ResourceNames = []string{"other"}
	e := event("update", "example.dev", "widgets", "status", "allow", byCtrl)
	if named.Uses(&e) {
		t.Error("a rule for the object other is used by a request for w")
	}
	if got := CountUses([]Grant{grant, named}, []auditv1.Event{e, e}); !cmp.Equal(got, []int{2, 0}) {
		t.Errorf("CountUses = %v, want [2 0]", got)
	}
}

// TestShippedRBAC: deploy/rbac binds the controller's ServiceAccount to
// roles it defines, with no wildcard: what make e2e's check of used grants
// needs.
func TestShippedRBAC(t *testing.T) {
	grants, err := ServiceAccountGrants(filepath.Join("..", "..", "deploy", "rbac"), "variant-controller-system", "variant-controller")
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) == 0 {
		t.Fatal("deploy/rbac grants the controller nothing")
	}
}

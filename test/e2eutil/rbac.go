package e2eutil

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/yaml"

	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

// Grant is one verb on one resource that a binding of a manifest gives a
// ServiceAccount: what the audit log can show being used.
type Grant struct {
	// Binding is the binding as RBAC names it in its audit reasons:
	// `ClusterRoleBinding "name"` or `RoleBinding "name/namespace"`.
	Binding string
	// Role is the role the rule is written in: the bound role, or, for an
	// aggregated ClusterRole, the role aggregated into it.
	Role string
	// File is the manifest the rule is written in.
	File string
	Request
	// ResourceNames, when set, are the only objects the rule covers.
	ResourceNames []string
}

// String is "verb group/resource (ClusterRole "x" in file)".
func (g Grant) String() string {
	s := g.Request.String()
	if len(g.ResourceNames) > 0 {
		s += fmt.Sprintf(" %v", g.ResourceNames)
	}
	return fmt.Sprintf("%s (%s, %s)", s, g.Role, g.File)
}

// rbacObjects are the RBAC objects of a directory of manifests.
type rbacObjects struct {
	clusterRoles        []rbacv1.ClusterRole
	roles               []rbacv1.Role
	clusterRoleBindings []rbacv1.ClusterRoleBinding
	roleBindings        []rbacv1.RoleBinding
	// file is where each role was read, by "ClusterRole name" or
	// "Role namespace/name".
	file map[string]string
}

// ServiceAccountGrants reads the YAML manifests of dir (*.yaml, *.yml; any
// number of documents each) and returns every verb on every resource that
// their ClusterRoleBindings and RoleBindings give the ServiceAccount
// namespace/name, through the roles the manifests define: an aggregated
// ClusterRole holds the rules of the manifests' ClusterRoles its selectors
// match, as Kubernetes aggregates them. A binding to a role the manifests
// do not define, a wildcard and a non-resource URL are errors: none can be
// checked against requests.
func ServiceAccountGrants(dir, namespace, name string) ([]Grant, error) {
	objs, err := readRBAC(dir)
	if err != nil {
		return nil, err
	}
	isSubject := func(subjects []rbacv1.Subject, bindingNS string) bool {
		for _, s := range subjects {
			ns := s.Namespace
			if ns == "" {
				ns = bindingNS
			}
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == name && ns == namespace {
				return true
			}
		}
		return false
	}
	var grants []Grant
	for _, b := range objs.clusterRoleBindings {
		if !isSubject(b.Subjects, "") {
			continue
		}
		g, err := objs.grantsOf(fmt.Sprintf("ClusterRoleBinding %q", b.Name), b.RoleRef, "")
		if err != nil {
			return nil, err
		}
		grants = append(grants, g...)
	}
	for _, b := range objs.roleBindings {
		if !isSubject(b.Subjects, b.Namespace) {
			continue
		}
		g, err := objs.grantsOf(fmt.Sprintf("RoleBinding %q", b.Name+"/"+b.Namespace), b.RoleRef, b.Namespace)
		if err != nil {
			return nil, err
		}
		grants = append(grants, g...)
	}
	if len(grants) == 0 {
		return nil, fmt.Errorf("no binding in %s grants ServiceAccount %s/%s anything", dir, namespace, name)
	}
	return grants, nil
}

// grantsOf expands the rules of the role ref names (a Role in namespace
// ns) into grants of binding.
func (o *rbacObjects) grantsOf(binding string, ref rbacv1.RoleRef, ns string) ([]Grant, error) {
	type source struct {
		role  string
		rules []rbacv1.PolicyRule
	}
	var sources []source
	switch ref.Kind {
	case "ClusterRole":
		i := slices.IndexFunc(o.clusterRoles, func(r rbacv1.ClusterRole) bool { return r.Name == ref.Name })
		if i < 0 {
			return nil, fmt.Errorf("%s names ClusterRole %q, which the manifests do not define", binding, ref.Name)
		}
		role := o.clusterRoles[i]
		sources = append(sources, source{"ClusterRole " + role.Name, role.Rules})
		if role.AggregationRule != nil {
			for _, other := range o.clusterRoles {
				if other.Name == role.Name {
					continue
				}
				for _, sel := range role.AggregationRule.ClusterRoleSelectors {
					s, err := metav1.LabelSelectorAsSelector(&sel)
					if err != nil {
						return nil, fmt.Errorf("ClusterRole %s: aggregation selector: %w", role.Name, err)
					}
					if s.Matches(labels.Set(other.Labels)) {
						sources = append(sources, source{"ClusterRole " + other.Name, other.Rules})
						break
					}
				}
			}
		}
	case "Role":
		i := slices.IndexFunc(o.roles, func(r rbacv1.Role) bool { return r.Name == ref.Name && r.Namespace == ns })
		if i < 0 {
			return nil, fmt.Errorf("%s names Role %s/%s, which the manifests do not define", binding, ns, ref.Name)
		}
		sources = append(sources, source{"Role " + ns + "/" + ref.Name, o.roles[i].Rules})
	default:
		return nil, fmt.Errorf("%s names a %q, not a Role or ClusterRole", binding, ref.Kind)
	}
	var grants []Grant
	for _, src := range sources {
		for _, rule := range src.rules {
			if len(rule.NonResourceURLs) > 0 {
				return nil, fmt.Errorf("%s: a rule grants non-resource URLs %v; the check covers resources only", src.role, rule.NonResourceURLs)
			}
			for _, list := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs} {
				if slices.Contains(list, rbacv1.APIGroupAll) {
					return nil, fmt.Errorf("%s: a rule has a wildcard (%v %v %v): no request can prove all it grants used; name the groups, resources and verbs", src.role, rule.APIGroups, rule.Resources, rule.Verbs)
				}
			}
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					for _, verb := range rule.Verbs {
						grants = append(grants, Grant{
							Binding: binding, Role: src.role, File: o.file[src.role],
							Request:       Request{Verb: verb, Group: group, Resource: resource},
							ResourceNames: rule.ResourceNames,
						})
					}
				}
			}
		}
	}
	return grants, nil
}

// readRBAC reads the RBAC objects of dir's manifests; other kinds are
// skipped.
func readRBAC(dir string) (*rbacObjects, error) {
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("no YAML manifests in %s", dir)
	}
	objs := &rbacObjects{file: map[string]string{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		err = input.EachDocument(data, func(raw map[string]any) error {
			return objs.add(raw, filepath.Base(f))
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return objs, nil
}

func (o *rbacObjects) add(raw map[string]any, file string) error {
	apiVersion, _ := raw["apiVersion"].(string)
	kind, _ := raw["kind"].(string)
	if apiVersion != rbacv1.SchemeGroupVersion.String() {
		return nil
	}
	data, err := yaml.Marshal(raw)
	if err != nil {
		return err
	}
	strict := func(into any) error { return yaml.UnmarshalStrict(data, into) }
	switch kind {
	case "ClusterRole":
		var r rbacv1.ClusterRole
		if err := strict(&r); err != nil {
			return err
		}
		o.clusterRoles = append(o.clusterRoles, r)
		o.file["ClusterRole "+r.Name] = file
	case "Role":
		var r rbacv1.Role
		if err := strict(&r); err != nil {
			return err
		}
		o.roles = append(o.roles, r)
		o.file["Role "+r.Namespace+"/"+r.Name] = file
	case "ClusterRoleBinding":
		var b rbacv1.ClusterRoleBinding
		if err := strict(&b); err != nil {
			return err
		}
		o.clusterRoleBindings = append(o.clusterRoleBindings, b)
	case "RoleBinding":
		var b rbacv1.RoleBinding
		if err := strict(&b); err != nil {
			return err
		}
		o.roleBindings = append(o.roleBindings, b)
	}
	return nil
}

// Audit annotations of the authorizer: its decision and, for RBAC, which
// binding of which role allowed the request.
const (
	decisionAnnotation = "authorization.k8s.io/decision"
	reasonAnnotation   = "authorization.k8s.io/reason"
)

// allowedBy finds the binding in RBAC's reason ("RBAC: allowed by
// ClusterRoleBinding "x" of ClusterRole "y" to ServiceAccount "..."").
var allowedBy = regexp.MustCompile(`^RBAC: allowed by ((?:ClusterRoleBinding|RoleBinding) "[^"]+") of `)

// Uses reports whether the request of e was allowed through g: by g's
// binding, for g's verb on g's resource (and object, for a rule with
// resource names).
func (g Grant) Uses(e *auditv1.Event) bool {
	if e.Annotations[decisionAnnotation] != "allow" || RequestOf(e) != g.Request {
		return false
	}
	m := allowedBy.FindStringSubmatch(e.Annotations[reasonAnnotation])
	if m == nil || m[1] != g.Binding {
		return false
	}
	return len(g.ResourceNames) == 0 || (e.ObjectRef != nil && slices.Contains(g.ResourceNames, e.ObjectRef.Name))
}

// Forbidden selects the requests the authorizer refused.
func Forbidden(e *auditv1.Event) bool { return e.Annotations[decisionAnnotation] == "forbid" }

// CountUses is, for each grant, how many of events it allowed.
func CountUses(grants []Grant, events []auditv1.Event) []int {
	counts := make([]int, len(grants))
	for i := range events {
		for j, g := range grants {
			if g.Uses(&events[i]) {
				counts[j]++
			}
		}
	}
	return counts
}

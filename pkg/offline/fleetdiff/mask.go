package fleetdiff

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/porch-variants/variant-controller/pkg/mutate"
)

// Masks of injected values, as kubectl diff masks a Secret's data: the
// value is hidden, and whether it changed is still told.
const (
	masked       = "***"
	maskedBefore = "*** (before)"
	maskedAfter  = "*** (after)"
)

// maskInjected returns copies of two versions of a package's files in which
// every value injection copied from an in-cluster object (the data of a
// ConfigMap, the spec of another kind, in a resource carrying
// mutate.InjectedResourceAnnotation) is masked: "***" when both versions
// hold the same value, "*** (before)" and "*** (after)" when it changed. A
// CI log that prints a diff then does not print the cluster's
// configuration. Files without an injected resource are returned as they
// are; those with one are written back by kyaml (both versions alike, so
// the diff shows only real changes).
func maskInjected(before, after map[string]string) (map[string]string, map[string]string) {
	leavesBefore, leavesAfter := map[string]string{}, map[string]string{}
	parsedBefore := parseInjected(before, leavesBefore)
	parsedAfter := parseInjected(after, leavesAfter)
	if len(parsedBefore) == 0 && len(parsedAfter) == 0 {
		return before, after
	}
	mask := func(own, other map[string]string, changed string) func(key string) string {
		return func(key string) string {
			if v, ok := other[key]; ok && v == own[key] {
				return masked
			}
			return changed
		}
	}
	return rewrite(before, parsedBefore, mask(leavesBefore, leavesAfter, maskedBefore)),
		rewrite(after, parsedAfter, mask(leavesAfter, leavesBefore, maskedAfter))
}

// injectedResource is a resource of a file that injection wrote into.
type injectedResource struct {
	node  *yaml.RNode
	field string
	id    string
}

// parseInjected parses the YAML files that hold an injected resource, and
// records each injected leaf value in leaves under a key naming file,
// resource and path.
func parseInjected(files map[string]string, leaves map[string]string) map[string][]*yaml.RNode {
	out := map[string][]*yaml.RNode{}
	for path, content := range files {
		if !strings.Contains(content, mutate.InjectedResourceAnnotation) {
			continue
		}
		nodes, err := kio.FromBytes([]byte(content))
		if err != nil {
			continue // not YAML: shown as it is
		}
		found := false
		for _, n := range nodes {
			r, ok := injectedOf(n)
			if !ok {
				continue
			}
			found = true
			walkLeaves(r.node.Field(r.field).Value, path+"|"+r.id+"|"+r.field, func(key string, leaf *yaml.RNode) {
				leaves[key] = leaf.YNode().Value
			})
		}
		if found {
			out[path] = nodes
		}
	}
	return out
}

// injectedOf says whether n is a resource injection wrote into, and which
// field it filled.
func injectedOf(n *yaml.RNode) (injectedResource, bool) {
	if _, ok := n.GetAnnotations()[mutate.InjectedResourceAnnotation]; !ok {
		return injectedResource{}, false
	}
	gv, err := schema.ParseGroupVersion(n.GetApiVersion())
	if err != nil {
		return injectedResource{}, false
	}
	field := mutate.InjectedField(gv.WithKind(n.GetKind()))
	if n.Field(field) == nil {
		return injectedResource{}, false
	}
	return injectedResource{node: n, field: field, id: n.GetApiVersion() + "/" + n.GetKind() + "/" + n.GetNamespace() + "/" + n.GetName()}, true
}

// walkLeaves calls fn for every scalar under n, with key extended by its
// path.
func walkLeaves(n *yaml.RNode, key string, fn func(key string, leaf *yaml.RNode)) {
	if n == nil {
		return
	}
	switch n.YNode().Kind {
	case yaml.MappingNode:
		_ = n.VisitFields(func(f *yaml.MapNode) error {
			walkLeaves(f.Value, key+"."+f.Key.YNode().Value, fn)
			return nil
		})
	case yaml.SequenceNode:
		for i, item := range n.Content() {
			walkLeaves(yaml.NewRNode(item), key+"["+strconv.Itoa(i)+"]", fn)
		}
	case yaml.ScalarNode:
		fn(key, n)
	}
}

// rewrite masks the injected leaves of the parsed files and returns a copy
// of files with them written back.
func rewrite(files map[string]string, parsed map[string][]*yaml.RNode, mask func(key string) string) map[string]string {
	if len(parsed) == 0 {
		return files
	}
	out := make(map[string]string, len(files))
	for path, content := range files {
		nodes, ok := parsed[path]
		if !ok {
			out[path] = content
			continue
		}
		for _, n := range nodes {
			r, ok := injectedOf(n)
			if !ok {
				continue
			}
			walkLeaves(r.node.Field(r.field).Value, path+"|"+r.id+"|"+r.field, func(key string, leaf *yaml.RNode) {
				leaf.YNode().Value = mask(key)
				leaf.YNode().Tag = yaml.NodeTagString
				leaf.YNode().Style = 0
			})
		}
		s, err := kio.StringAll(nodes)
		if err != nil {
			// Unreachable for nodes kyaml parsed; never show the values.
			s = "# " + path + ": injected values masked\n"
		}
		out[path] = s
	}
	return out
}

// filesDiff is UnifiedDiff of two versions of a package's files, with the
// injected values masked unless showInjected.
func filesDiff(aName, bName string, a, b map[string]string, showInjected bool) string {
	if !showInjected {
		a, b = maskInjected(a, b)
	}
	return UnifiedDiff(aName, bName, a, b)
}

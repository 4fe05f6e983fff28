package kptengine

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/comments"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Heal is what Porch does to the files of a resources update before it
// renders them: every resource of the update that was in the revision
// before (same apiVersion, kind, namespace and name) gets the comments the
// old one had, copied by kyaml (a client that edits a resource through Go
// structs, or replaces a map, loses its comments; Porch puts them back),
// and every resource file is written out again. Resources holding ytt
// template comments ("#@", "#!") are left alone, as Porch leaves them.
func Heal(old, updated map[string]string) (files map[string]string, err error) {
	defer recoverPanic(&err, "heal package")
	schemaReady()
	before, err := (&packageReader{files: old, extra: map[string]string{}}).Read()
	if err != nil {
		return nil, fmt.Errorf("read the revision's files: %w", err)
	}
	copyComments := kio.FilterFunc(func(nodes []*yaml.RNode) ([]*yaml.RNode, error) {
		for _, n := range nodes {
			text := ""
			for _, o := range before {
				if !sameResource(n, o) {
					continue
				}
				// Copying changes nothing when the update left the resource
				// as it was (it has every comment already), or when the old
				// one has no comment to give; unless the new one has a
				// folded scalar (kyaml turns those double-quoted while
				// copying). Trees are compared without writing them out;
				// the text is written only for the resources that may be
				// copied.
				if healShortcuts && !hasFolded(n.YNode()) && (!hasComments(o.YNode()) || sameResourceTree(o.YNode(), n.YNode())) {
					continue
				}
				if text == "" {
					text = n.MustString()
				}
				old := o.MustString()
				if templated(text) || templated(old) {
					continue
				}
				if err := comments.CopyComments(o, n); err != nil {
					return nil, fmt.Errorf("copy comments: %w", err)
				}
			}
		}
		return nodes, nil
	})
	return filterPackage(updated, copyComments)
}

// healShortcuts enables the two cases in which Heal skips kyaml's comment
// copy because it would change nothing (switched off by the test that
// proves exactly that).
var healShortcuts = true

// sameResourceTree reports whether two resources are equal in everything
// written out, their positions and the annotations kio keeps while it reads
// and filters aside (path, index, id: the update's resources went through
// kio's pipeline, which adds some; the old ones did not; kio strips them
// all when it writes).
func sameResourceTree(a, b *yaml.Node) bool {
	return sameTreeAt(a, b, 0)
}

// kioAnnotations are the annotations sameResourceTree leaves out.
var kioAnnotations = map[string]bool{
	kioutil.PathAnnotation: true, kioutil.IndexAnnotation: true, kioutil.IdAnnotation: true,
	kioutil.LegacyPathAnnotation: true, kioutil.LegacyIndexAnnotation: true, kioutil.LegacyIdAnnotation: true,
	kioutil.InternalAnnotationsMigrationResourceIDAnnotation: true,
}

// sameTreeAt compares two trees at a depth of the path to
// metadata.annotations: 0 the resource, 1 its metadata, 2 its annotations,
// -1 anywhere else.
func sameTreeAt(a, b *yaml.Node, depth int) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind != b.Kind || a.Style != b.Style || a.Tag != b.Tag || a.Value != b.Value || a.Anchor != b.Anchor ||
		a.HeadComment != b.HeadComment || a.LineComment != b.LineComment || a.FootComment != b.FootComment {
		return false
	}
	if depth == 2 && a.Kind == yaml.MappingNode {
		return samePairs(withoutKio(a.Content), withoutKio(b.Content), -1)
	}
	if a.Kind != yaml.MappingNode {
		depth = -1
	}
	return samePairs(a.Content, b.Content, depth)
}

// samePairs compares the children of two nodes; in a mapping on the path
// to metadata.annotations the next key on that path goes one level deeper.
func samePairs(a, b []*yaml.Node, depth int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		next := -1
		if depth >= 0 && i%2 == 1 && (depth == 0 && a[i-1].Value == "metadata" || depth == 1 && a[i-1].Value == "annotations") {
			next = depth + 1
		}
		if !sameTreeAt(a[i], b[i], next) {
			return false
		}
	}
	return true
}

// withoutKio drops kio's annotations (and their values) from the pairs of
// an annotations mapping.
func withoutKio(pairs []*yaml.Node) []*yaml.Node {
	out := make([]*yaml.Node, 0, len(pairs))
	for i := 0; i+1 < len(pairs); i += 2 {
		k, v := pairs[i], pairs[i+1]
		if kioAnnotations[k.Value] {
			continue
		}
		out = append(out, k, v)
	}
	return out
}

// hasComments reports whether any node of the tree carries a comment.
func hasComments(n *yaml.Node) bool {
	if n == nil {
		return false
	}
	if n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" {
		return true
	}
	for _, c := range n.Content {
		if hasComments(c) {
			return true
		}
	}
	return false
}

// hasFolded reports whether any node of the tree is in folded style.
func hasFolded(n *yaml.Node) bool {
	if n == nil {
		return false
	}
	if n.Style&yaml.FoldedStyle != 0 {
		return true
	}
	for _, c := range n.Content {
		if hasFolded(c) {
			return true
		}
	}
	return false
}

func sameResource(a, b *yaml.RNode) bool {
	return a.GetNamespace() == b.GetNamespace() && a.GetName() == b.GetName() &&
		a.GetApiVersion() == b.GetApiVersion() && a.GetKind() == b.GetKind()
}

// templated reports whether a resource's text holds ytt template comments.
func templated(s string) bool {
	return strings.Contains(s, "#@") || strings.Contains(s, "#!")
}

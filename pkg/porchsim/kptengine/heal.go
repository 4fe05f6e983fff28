package kptengine

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/comments"
	"sigs.k8s.io/kustomize/kyaml/kio"
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
	before, err := (&packageReader{files: old, extra: map[string]string{}}).Read()
	if err != nil {
		return nil, fmt.Errorf("read the revision's files: %w", err)
	}
	copyComments := kio.FilterFunc(func(nodes []*yaml.RNode) ([]*yaml.RNode, error) {
		for _, n := range nodes {
			text := n.MustString()
			for _, o := range before {
				if !sameResource(n, o) {
					continue
				}
				old := o.MustString()
				if templated(text) || templated(old) {
					continue
				}
				// Copying changes nothing when the update left the resource
				// as it was (it has every comment already), or when the old
				// one has no comment to give and the new one no folded
				// scalar (kyaml turns those double-quoted while copying).
				if healShortcuts && (old == text || (!hasComments(o.YNode()) && !hasFolded(n.YNode()))) {
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
